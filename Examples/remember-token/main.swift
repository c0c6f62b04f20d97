// remember-token: stores an API token in the keyring on the first run, finds it on the next.
// It never prints the token itself. `remember-token --reset` removes the item again.
import Foundation
import SecureDictionary

extension SecureDictionary.Keys {
    static let apiToken = SecureDictionary.Key<String?>("apiToken")
    static let savedAt = SecureDictionary.Key<Date?>("savedAt")
}

let applicationID = "io.github.securedictionary.example"

do {
    if CommandLine.arguments.dropFirst().first == "--reset" {
        let removed = try SecureDictionary.delete(name: "tokens", applicationID: applicationID)
        print(removed ? "Removed the example's keyring item." : "There was no keyring item to remove.")
        exit(0)
    }

    let tokens = try SecureDictionary(name: "tokens", applicationID: applicationID)
    print("Keyring item: \(tokens.item.name)")

    if let token = try tokens.value(for: .apiToken), let saved = try tokens.value(for: .savedAt) {
        print("Found the token stored on \(saved.formatted()) (\(token.count) characters, not shown).")
        print("Run with --reset to remove it.")
    } else {
        // A fresh random token stands in for one your app would get from a server.
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        try tokens.update { entries in  // both entries, one keyring write
            try entries.set(token, for: .apiToken)
            try entries.set(Date(), for: .savedAt)
        }
        print("Stored a new token (\(token.count) characters, not shown). Run me again to find it.")
    }
} catch let error as SecureDictionaryError {
    FileHandle.standardError.write(Data("remember-token: \(error)\n".utf8))
    exit(2)
}
