import Foundation
import SecureDictionaryTestSupport
import Synchronization
import Testing

@testable import SecureDictionary
@testable import SecureDictionaryFileStore

/// The holes found in the Secret portal store's files, which every
/// encrypted-file store shares. Each test failed before its fix (see the commit messages).
@Suite struct FileStoreHoleTests {
    let base: String
    let secret = SecretBytes(copying: Array(repeating: 0x5a, count: 64))

    init() throws {
        base = try TemporaryFolder.create("sd-holes")
    }

    private func store(_ folder: String) -> EncryptedFileStore {
        let secret = self.secret
        return EncryptedFileStore(folderPath: folder) { _ throws(SecureDictionaryError) in secret }
    }

    private func dictionary(_ store: EncryptedFileStore, timeout: Duration = .seconds(3)) throws -> SecureDictionary {
        try SecureDictionary(name: "settings", applicationID: "org.example.App", options: .init(timeout: timeout, store: store))
    }

    private func itemFile(in folder: String) throws -> String {
        ItemFileFolder(path: folder).filePath(of: try KeyringItem(dictionaryName: "settings", applicationID: "org.example.App"))
    }

    // MARK: The folder is checked as ssh checks ~/.ssh

    @Test func aSymlinkedFolderIsRefused() throws {
        let real = "\(base)/real"
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: false)
        chmod(real, 0o700)
        try FileManager.default.createSymbolicLink(atPath: "\(base)/link", withDestinationPath: real)
        let error = Self.error { try dictionary(store("\(base)/link")).setValue("v", forKey: "k") }
        #expect(Self.name(error) == "unsafePath", "\(String(describing: error))")
        #expect("\(String(describing: error))".contains("symbolic link"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: real).isEmpty, "written through the link")
    }

    @Test func aFolderOthersMayWriteToIsRefused() throws {
        let folder = "\(base)/open"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        chmod(folder, 0o777)
        let error = Self.error { try dictionary(store(folder)).setValue("v", forKey: "k") }
        #expect(Self.name(error) == "unsafePath", "\(String(describing: error))")
        #expect("\(String(describing: error))".contains("chmod"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).isEmpty)
    }

    @Test(.enabled(if: getuid() == 0, "needs root to give a folder to another user"))
    func aFolderOfAnotherUserIsRefused() throws {
        let folder = "\(base)/theirs"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        chmod(folder, 0o777)
        chown(folder, 4242, 4242)
        let error = Self.error { try dictionary(store(folder)).setValue("v", forKey: "k") }
        #expect(Self.name(error) == "unsafePath", "\(String(describing: error))")
        #expect("\(String(describing: error))".contains("uid 4242"))
        // Reads too: another user's folder may hold their files, not ours.
        #expect(Self.name(Self.error { try dictionary(store(folder)) }) == "unsafePath")
    }

    @Test func aFolderUnderAFolderOthersMayWriteToIsRefused() throws {
        let parent = "\(base)/shared"
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: false)
        chmod(parent, 0o777)  // not sticky: anyone could rename the store's folder away
        let error = Self.error { try dictionary(store("\(parent)/securedictionary")).setValue("v", forKey: "k") }
        #expect(Self.name(error) == "unsafePath", "\(String(describing: error))")
    }

    @Test func anItemFileThatIsASymlinkIsATypedErrorThatNamesTheFix() throws {
        let folder = "\(base)/store"
        try dictionary(store(folder)).setValue("v", forKey: "k")
        let file = try itemFile(in: folder)
        try FileManager.default.moveItem(atPath: file, toPath: "\(base)/elsewhere.sdict")
        try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: "\(base)/elsewhere.sdict")
        let error = Self.error { try dictionary(store(folder)) }
        #expect(Self.name(error) == "unsafePath", "\(String(describing: error))")
        #expect("\(String(describing: error))".contains("remove the link"))
    }

    // MARK: Rollback

    @Test func anOldCopyPutBackIsRefusedAndNothingIsBuiltOnIt() throws {
        let folder = "\(base)/store"
        let settings = try dictionary(store(folder))
        try settings.setValue("old", forKey: "token")
        let file = try itemFile(in: folder)
        let oldCopy = try Data(contentsOf: URL(fileURLWithPath: file))
        try settings.setValue("new", forKey: "token")
        try oldCopy.write(to: URL(fileURLWithPath: file))  // put back
        #expect(Self.name(Self.error { try dictionary(store(folder)) }) == "rolledBack")
        #expect(Self.name(Self.error { try settings.setValue("built on the old copy", forKey: "other") }) == "rolledBack")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == oldCopy, "a write built on the old copy")
    }

    // MARK: The writers' lock cannot be removed or swapped

    /// Two stores over two spellings of one folder (so that threads of this process do not
    /// queue on one in-process lock, as processes would not), 2 threads each × 50 writes,
    /// while another thread removes every lock and pid file and puts folders in their place
    /// every 2 ms. Before: writers lost each other's writes, without an error.
    @Test func writersLoseNothingWhileTheirLockFilesAreRemovedAndReplaced() async throws {
        let folder = "\(base)/store"
        let stores = [store(folder), store("\(folder)/.")]
        try dictionary(stores[0]).setValue(0, forKey: "start")
        let stop = Stop()
        let attacker = Thread {
            while !stop.value.load(ordering: .relaxed) {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
                for name in names where !name.hasSuffix(".sdict") && !name.hasPrefix(".") {
                    try? FileManager.default.removeItem(atPath: "\(folder)/\(name)")
                    if Bool.random() {
                        try? FileManager.default.createDirectory(atPath: "\(folder)/\(name)", withIntermediateDirectories: false)
                    }
                }
                usleep(2_000)
            }
        }
        attacker.start()
        let (writers, writes) = (4, 50)
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            for writer in 0..<writers {
                group.addTask {
                    let settings = try dictionary(stores[writer % 2], timeout: .seconds(30))
                    var failed = 0
                    for index in 0..<writes {
                        do { try settings.setValue(.integer(index), forKey: "w\(writer)-\(index)") } catch { failed += 1 }
                    }
                    return failed
                }
            }
            return try await group.reduce(0, +)
        }
        stop.value.store(true, ordering: .relaxed)
        let fresh = try dictionary(store(folder))
        let lost = writers * writes - failures - (fresh.count - 1)
        #expect(failures == 0)
        #expect(lost == 0, "\(lost) of \(writers * writes) acknowledged writes lost")
    }

    private final class Stop: Sendable {
        let value = Atomic<Bool>(false)
    }

    private static func name(_ error: (any Error)?) -> String { error.map(caseName) ?? "ok" }

    private static func error(_ body: () throws -> Any) -> (any Error)? {
        do {
            _ = try body()
            return nil
        } catch {
            return error
        }
    }
}
