import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// `sd-test-writer scan APP COUNT loaded|released|control`: the process a core-dump scan looks
/// at (issue 37), `ScannedProcess.run` with the library's locked regions on its "ready" line:
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
}
