import Foundation
import SecureDictionaryTestSupport
import Testing

/// The holes of the encrypted-file stores, through `secure-dict`, as a shell user meets
/// them.
extension StoreOption {
    /// Every spelling of the folder, as the hole was reported: a credential store in
    /// `$XDG_DATA_HOME` (no `$STATE_DIRECTORY`), an old copy put back, then read through other
    /// spellings of the same folder. Before: `X/` (and `//`, `/./`, a link above) read the old
    /// copy with exit 0, and a write through them gave it a newer generation, so that every
    /// spelling then accepted it.
    @Test func anOldCopyPutBackIsRefusedWhicheverSpellingOfTheFolderReadsIt() throws {
        let data = "\(base)/x"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(base)/alias", withDestinationPath: base)
        func run(_ dataHome: String, _ arguments: [String]) throws -> CLIHarness.Output {
            try cli(arguments + ["--store", "credential"], extra: ["XDG_DATA_HOME": dataHome, "STATE_DIRECTORY": ""])
        }
        #expect(try run(data, ["write", "--app", "a", "--name", "x", "k1", "v1"]).status == 0)
        let folder = "\(data)/securedictionary"
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).first { $0.hasSuffix(".sdict") })
        let oldCopy = try Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(name)"))
        #expect(try run(data, ["write", "--app", "a", "--name", "x", "k1", "v2"]).status == 0)
        try oldCopy.write(to: URL(fileURLWithPath: "\(folder)/\(name)"))
        for spelling in [data, "\(data)/", "\(base)//x", "\(base)/./x", "\(base)/alias/x"] {
            let read = try run(spelling, ["read", "--app", "a", "--name", "x", "k1"])
            #expect(read.status == 3 && read.stderr.contains("older than a copy"), "XDG_DATA_HOME=\(spelling): \(read)")
            let write = try run(spelling, ["write", "--app", "a", "--name", "x", "k2", "v"])
            #expect(write.status == 3, "XDG_DATA_HOME=\(spelling): \(write)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(name)")) == oldCopy, "a write built on the old copy")
    }
}
