// settings-store: typed settings that survive restarts, kept in one named dictionary.
//
//   scripts/run-example settings-store                # counts launches, shows the last run
//   scripts/run-example settings-store --theme dark   # changes a setting
//   scripts/run-example settings-store --reset        # removes the keyring item
//
// Look inside with: secure-dict read --app io.github.securedictionary.example --name settings
import Foundation
import SecureDictionary

// Typed keys: a name in the dictionary, a Swift type, and the value read while it is missing.
extension SecureDictionary.Keys {
    static let launchCount = SecureDictionary.Key<Int>("launchCount", default: 0)
    static let lastRun = SecureDictionary.Key<Date?>("lastRun")
    static let theme = SecureDictionary.Key<String>("theme", default: "system")
}

let applicationID = "io.github.securedictionary.example"
let arguments = Array(CommandLine.arguments.dropFirst())

do {
    if arguments == ["--reset"] {
        let removed = try SecureDictionary.delete(name: "settings", applicationID: applicationID)
        print(removed ? "Removed the settings." : "There were no settings to remove.")
        exit(0)
    }

    // One keyring read, here. A locked keyring throws: it never looks like empty settings.
    let settings = try SecureDictionary(name: "settings", applicationID: applicationID)

    // Read-modify-write as one atomic keyring write: if two copies of this program start at
    // the same moment, both launches are counted (update re-reads under a cross-process lock).
    let (launches, previousRun) = try settings.update { entries in
        let launches = entries[.launchCount] + 1
        let previousRun = entries[.lastRun]
        try entries.set(launches, for: .launchCount)
        try entries.set(Date(), for: .lastRun)
        return (launches, previousRun)
    }

    // A plain setter: one keyring write. It throws, so a failed save is never silent.
    if arguments.count == 2, arguments[0] == "--theme" {
        try settings.set(arguments[1], for: .theme)
    }

    print("Launch number \(launches).")
    if let previousRun {
        print("Last run: \(previousRun.formatted(date: .abbreviated, time: .standard)).")
    } else {
        print("First run: nothing stored yet.")
    }
    // Reads come from memory: no keyring call.
    print("Theme: \(settings[.theme]) (change it with --theme NAME).")
} catch let error as SecureDictionaryError {
    // Safe to show: errors never contain keys or values.
    FileHandle.standardError.write(Data("settings-store: \(error)\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("settings-store: \(error)\n".utf8))
    exit(2)
}
