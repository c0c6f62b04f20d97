import Foundation
public import SecureDictionary

#if canImport(Glibc)
    import Glibc
#endif

/// The process a core scan looks at, as `sd-test-writer scan` runs it for the
/// keyring tests and `sd-reliability worker hygiene` for scenario 9: it holds dictionaries
/// planted by another process, reloaded once, while ``CoreScan`` takes its core.
///
/// ```swift
/// try ScannedProcess.run(app: app, count: 4, mode: "loaded", options: .init(timeout: .seconds(20)))
/// ```
public enum ScannedProcess {
    /// Opens the dictionaries scan-0 … scan-(`count`-1) of `app`, prints "opened PID
    /// VMLCK_KB_BEFORE VMLCK_KB_AFTER" and waits for a line (the caller replaces the items
    /// meanwhile); then reloads each (a new generation replaces the first) and writes one key
    /// that is no canary. `mode` "loaded" keeps them, never reading a value; "released"
    /// releases them all; "control" keeps them and a copy of every key and value (what a
    /// caller holds). Then prints "ready VMLCK_KB", followed by "LOCKED_REGIONS
    /// UNLOCKED_REGIONS LOCK_FAILURES" of the library's locked memory when
    /// `reportingLockedRegions`, and waits for a line.
    ///
    /// - Throws: what opening, reloading or writing a dictionary throws.
    public static func run(
        app: String, count: Int, mode: String, options: SecureDictionary.Options, reportingLockedRegions: Bool = false
    ) throws {
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
        var ready = "ready \(lockedKilobytes())"
        if reportingLockedRegions {
            let status = SecureMemory.status
            ready += " \(status.lockedRegions) \(status.unlockedRegions) \(status.lockFailures)"
        }
        print(ready)
        fflush(nil)
        _ = readLine()
        withExtendedLifetime((dictionaries, copies)) {}
    }

    /// VmLck of this process, in KiB (-1 where /proc does not say).
    public static func lockedKilobytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmLck:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }
}
