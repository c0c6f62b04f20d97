import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `sd-test-writer scan APP COUNT loaded|released|control`: the process a core-dump scan looks
/// at, `ScannedProcess.run` with the library's locked regions on its "ready" line:
/// "ready VMLCK_KB LOCKED_REGIONS UNLOCKED_REGIONS LOCK_FAILURES".
enum MemoryScan {
    static func run(app: String, count: Int, mode: String, options: SecureDictionary.Options) throws {
        try ScannedProcess.run(app: app, count: count, mode: mode, options: options, reportingLockedRegions: true)
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

    /// `sd-test-writer scan-memory-store APP MODE FILE...`: an `InMemoryKeyringStore` of this
    /// process holds each FILE (a binary plist, read straight into the store's secret bytes) as
    /// the dictionary named by the file's name; each dictionary is opened, then kept unread
    /// ("loaded"), released ("released", the store still holds them) or copied out
    /// ("control"). Prints "ready PID" and waits for a line: the process a core scan looks at.
    static func runInMemoryStore(app: String, mode: String, files: [String]) throws {
        let store = InMemoryKeyringStore()
        var dictionaries: [SecureDictionary] = []
        for file in files {
            let item = try KeyringItem(dictionaryName: URL(fileURLWithPath: file).lastPathComponent, applicationID: app)
            try store.store(try secret(readFrom: file), for: item, timeout: .seconds(3))
            dictionaries.append(
                try SecureDictionary(name: item.dictionaryName, applicationID: app, options: .init(store: store)))
        }
        var copies: [[String: SecureDictionary.Value]] = []
        switch mode {
        case "control": copies = dictionaries.map(\.snapshot)
        case "released": dictionaries.removeAll()
        default: break
        }
        print("ready \(getpid())")
        fflush(nil)
        _ = readLine()
        withExtendedLifetime((store, dictionaries, copies)) {}
    }

    /// The whole file at `path`, read with `read(2)` straight into secret bytes: no other copy.
    static func secret(readFrom path: String) throws -> SecretBytes {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw CocoaError(.fileReadNoSuchFile) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw CocoaError(.fileReadUnknown) }
        var complete = true
        let secret = SecretBytes(count: Int(status.st_size)) { buffer in
            var offset = 0
            while offset < buffer.count {
                let got = read(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                guard got > 0 else {
                    complete = false
                    return
                }
                offset += got
            }
        }
        guard complete else { throw CocoaError(.fileReadUnknown) }
        return secret
    }
}
