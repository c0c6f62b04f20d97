import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// `sd-test-writer scan APP COUNT loaded|released|control`: the process a core-dump scan looks
/// at (issue 37). Opens the dictionaries scan-0 … scan-(COUNT-1) of APP (planted by another
/// process), prints "opened PID VMLCK_KB_BEFORE VMLCK_KB_AFTER" and waits for a line (the test replaces the items
/// meanwhile); then reloads each (a new generation replaces the first) and writes one key
/// that is no canary. "loaded" keeps them, never reading a value; "released" releases them
/// all; "control" keeps them and a copy of every key and value (what a caller holds). Then
/// prints "ready VMLCK_KB LOCKED_REGIONS UNLOCKED_REGIONS LOCK_FAILURES" and waits for a line.
enum MemoryScan {
    static func run(app: String, count: Int, mode: String, options: SecureDictionary.Options) throws {
        let before = lockedKilobytes()
        var dictionaries = try (0..<count).map { index in
            try SecureDictionary(name: "scan-\(index)", applicationID: app, options: options)
        }
        print("opened \(getpid()) \(before) \(lockedKilobytes())")
        fflush(nil)
        _ = readLine()
        for dictionary in dictionaries {
            try dictionary.reload()
            try dictionary.setValue("written", forKey: "zz-written")
        }
        var copies: [[String: SecureDictionary.Value]] = []
        switch mode {
        case "control": copies = dictionaries.map(\.snapshot)
        case "released": dictionaries.removeAll()
        default: break
        }
        let status = SecureMemory.status
        print("ready \(lockedKilobytes()) \(status.lockedRegions) \(status.unlockedRegions) \(status.lockFailures)")
        fflush(nil)
        _ = readLine()
        withExtendedLifetime((dictionaries, copies)) {}
    }

    /// `sd-test-writer plant APP FILE...`: each FILE, a binary plist, becomes the dictionary
    /// named by the file's name (its entries replace the dictionary's); prints "ok COUNT".
    static func plant(app: String, files: [String], options: SecureDictionary.Options) throws {
        for file in files {
            let entries = try BinaryPropertyListCoding.decode(Data(contentsOf: URL(fileURLWithPath: file)))
            let name = URL(fileURLWithPath: file).lastPathComponent
            try SecureDictionary(name: name, applicationID: app, options: options).update { $0.dictionary = entries }
        }
        print("ok \(files.count)")
    }

    /// VmLck of this process, in KiB.
    static func lockedKilobytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmLck:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
}
