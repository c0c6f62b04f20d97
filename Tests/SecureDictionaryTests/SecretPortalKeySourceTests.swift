import Foundation
import SecureDictionaryTestSupport
import Synchronization
import Testing

@testable import SecureDictionary
@testable import SecureDictionaryFileStore

/// The encrypted files of the Secret portal path, with a master secret
/// given by the test (the real portal is in KeyringIntegrationTests' `SecretPortal` suite).
@Suite struct SecretPortalKeySourceTests {
    let folder: String
    let secret = SecretBytes(copying: Array(repeating: 0x5a, count: 64))

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("sd-portal-\(UUID().uuidString)").path
    }

    final class FetchCount: Sendable {
        let count = Mutex(0)
    }

    private func store(secret: SecretBytes? = nil, fetches: FetchCount? = nil) -> EncryptedFileStore {
        let secret = secret ?? self.secret
        return EncryptedFileStore(folderPath: folder) { _ throws(SecureDictionaryError) in
            fetches?.count.withLock { $0 += 1 }
            return secret
        }
    }

    private func dictionary(_ store: EncryptedFileStore, name: String = "settings") throws -> SecureDictionary {
        try SecureDictionary(name: name, applicationID: "org.example.App", options: .init(store: store))
    }

    private func fileBytes(of name: String = "settings") throws -> [UInt8] {
        let item = try KeyringItem(dictionaryName: name, applicationID: "org.example.App")
        return Array(try Data(contentsOf: URL(fileURLWithPath: ItemFileFolder(path: folder).filePath(of: item))))
    }

    private func writeFile(_ bytes: [UInt8], name: String = "settings") throws {
        let item = try KeyringItem(dictionaryName: name, applicationID: "org.example.App")
        try Data(bytes).write(to: URL(fileURLWithPath: ItemFileFolder(path: folder).filePath(of: item)))
    }

    @Test func aValueSurvivesAnotherStoreAndIsEncryptedOnDisk() throws {
        try dictionary(store()).setValue("canary-7f3c91", forKey: "token-key-88e2")
        #expect(try dictionary(store())["token-key-88e2"] == .string("canary-7f3c91"))
        let file = try fileBytes()
        for plain in ["canary-7f3c91", "token-key-88e2", "bplist00"] {
            #expect(file.firstRange(of: Array(plain.utf8)) == nil, "\(plain) in clear on disk")
        }
        let attributes = try FileManager.default.attributesOfItem(
            atPath: ItemFileFolder(path: folder).filePath(
                of: KeyringItem(dictionaryName: "settings", applicationID: "org.example.App")))
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect((try FileManager.default.attributesOfItem(atPath: folder)[.posixPermissions] as? Int) == 0o700)
    }

    @Test func everyWriteUsesANewSaltAndNonce() throws {
        let settings = try dictionary(store())
        try settings.setValue(1, forKey: "a")
        let first = try fileBytes()
        try settings.setValue(1, forKey: "a")  // same content
        try settings.setValue(2, forKey: "a")
        try settings.setValue(1, forKey: "a")
        #expect(try fileBytes() != first)
        #expect(try fileBytes().count == first.count)
    }

    @Test func anotherAppsSecretCannotReadTheFile() throws {
        try dictionary(store()).setValue("x", forKey: "k")
        let other = store(secret: SecretBytes(copying: Array(repeating: 0x5b, count: 64)))
        // The key check in the header tells another secret from a damaged file.
        #expect(throws: SecureDictionaryError.store(FileStoreError.wrongKey(source: "the Secret portal"))) {
            try dictionary(other)
        }
    }

    @Test func aFileMovedToAnotherItemIsRejected() throws {
        try dictionary(store(), name: "a").setValue("x", forKey: "k")
        try writeFile(fileBytes(of: "a"), name: "b")
        #expect {
            try dictionary(store(), name: "b")
        } throws: { error in
            guard case .corrupt(let reason) = error as? SecureDictionaryError else { return false }
            return reason.contains("another item")
        }
    }

    @Test func everyFlippedBitAndEveryTruncationGivesATypedError() throws {
        let settings = try dictionary(store())
        try settings.setValue("v", forKey: "k")
        let good = try fileBytes()
        var outcomes: [String: Int] = [:]
        for index in good.indices {
            for bit in [0, 7] {
                var bad = good
                bad[index] ^= 1 << bit
                try writeFile(bad)
                outcomes[outcome { try dictionary(store()) }, default: 0] += 1
            }
        }
        for length in 0..<good.count {
            try writeFile(Array(good[..<length]))
            outcomes[outcome { try dictionary(store()) }, default: 0] += 1
        }
        // Nothing opens: the header is authenticated too, a version byte changed is named, a
        // changed key check is another key, a lowered generation an old copy.
        #expect(
            Set(outcomes.keys).isSubset(of: ["corrupt", "unsupportedFormatVersion", "wrongKey", "rolledBack"]), "\(outcomes)")
        #expect(outcomes["corrupt", default: 0] >= good.count * 2)
    }

    @Test func aFileLargerThanAnyDictionaryIsNotRead() throws {
        let settings = try dictionary(store())
        try settings.setValue("v", forKey: "k")
        let item = try KeyringItem(dictionaryName: "settings", applicationID: "org.example.App")
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: ItemFileFolder(path: folder).filePath(of: item)))
        // Sparse, 64 GiB: read, it would take minutes and more memory than the machine has.
        try handle.truncate(atOffset: 1 << 36)
        try handle.close()
        #expect(outcome { try dictionary(store()) } == "tooLarge")
    }

    @Test func writesOfTwoStoresOverTheSameFolderAreMerged() throws {
        let first = try dictionary(store())
        try first.setValue("a", forKey: "from-first")
        let second = try dictionary(store())
        try second.setValue("b", forKey: "from-second")
        try first.setValue("c", forKey: "again-first")  // its cache is stale: it must check the file
        let fresh = try dictionary(store())
        #expect(fresh.keys.sorted() == ["again-first", "from-first", "from-second"])
    }

    @Test func theMasterSecretIsFetchedOnceUntilForgotten() throws {
        let fetches = FetchCount()
        let store = store(fetches: fetches)
        let settings = try dictionary(store)
        try settings.setValue(1, forKey: "a")
        try settings.setValue(2, forKey: "b")
        #expect(fetches.count.withLock { $0 } == 1)
        store.forgetKey()
        try settings.setValue(3, forKey: "c")
        #expect(fetches.count.withLock { $0 } == 2)
    }

    @Test func aFailedFetchWritesNothing() throws {
        let store = EncryptedFileStore(folderPath: folder) { _ throws(SecureDictionaryError) in
            throw .store(FileStoreError.portalUnavailable(reason: "test"))
        }
        #expect(outcome { try dictionary(store).setValue(1, forKey: "a") } == "portalUnavailable")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        #expect(!files.contains { $0.hasSuffix(".sdict") })
    }

    @Test func aReadOnlyFolderFailsTheWriteAndKeepsTheFile() throws {
        guard getuid() != 0 else {
            // root ignores permissions; use a folder whose parent is a file instead (refused as
            // no folder before any write).
            let blocked = EncryptedFileStore(folderPath: "/proc/self/status/sd") { _ throws(SecureDictionaryError) in secret }
            #expect(outcome { try dictionary(blocked).setValue(1, forKey: "a") } == "unsafePath")
            return
        }
        let settings = try dictionary(store())
        try settings.setValue(1, forKey: "a")
        chmod(folder, 0o500)
        defer { chmod(folder, 0o700) }
        #expect(outcome { try settings.setValue(2, forKey: "a") } == "fileUnavailable")
        #expect(try dictionary(store())["a"] == .integer(1))
    }

    @Test func listingReadsTheHeadersOnly() throws {
        try dictionary(store(), name: "b").setValue(1, forKey: "k")
        try dictionary(store(), name: "a").setValue(1, forKey: "k")
        try SecureDictionary(name: nil, applicationID: "org.example.Other", options: .init(store: store()))
            .setValue(1, forKey: "k")
        let locked = EncryptedFileStore(folderPath: folder) { _ throws(SecureDictionaryError) in throw .locked }
        let names = try locked.listItems(applicationID: "org.example.App", collection: .default, timeout: .seconds(1))
            .map(\.item.name)
        #expect(names == ["org.example.App.__SecureDictionary__.a", "org.example.App.__SecureDictionary__.b"])
        #expect(try locked.listItems(applicationID: nil, collection: .default, timeout: .seconds(1)).count == 3)
    }

    @Test func aWriterThatHoldsTheFolderLockIsNamedAtTheDeadline() throws {
        let settings = try SecureDictionary(
            name: "settings", applicationID: "org.example.App", options: .init(timeout: .milliseconds(300), store: store()))
        try settings.setValue(1, forKey: "a")
        let holder = open(folder, O_RDONLY | O_DIRECTORY)
        #expect(holder >= 0)
        defer { close(holder) }
        #expect(flock(holder, LOCK_EX) == 0)  // another open file: as another process would; the kernel names this one
        #expect {
            try settings.setValue(2, forKey: "a")
        } throws: { error in
            guard case .lockHeld(let pid, _) = error as? SecureDictionaryError else { return false }
            return pid == Int(getpid())
        }
        flock(holder, LOCK_UN)
        try settings.setValue(3, forKey: "a")
        #expect(settings["a"]?.integerValue == 3)
    }

    @Test func outsideASandboxThePortalIsNotAsked() throws {
        guard Sandbox.current == nil else { return }
        let store = EncryptedFileStore(folderPath: folder, keySource: .secretPortal)
        #expect(outcome { try dictionary(store).setValue(1, forKey: "a") } == "portalUnavailable")
    }

    /// The portal is one key source of `EncryptedFileStore`: its description, its shared
    /// store in the default folder, and, outside a sandbox, what `doctor` and `unlock()` say.
    @Test func thePortalKeySourceSaysWhereItsKeyComesFrom() throws {
        let store = EncryptedFileStore(folderPath: folder, keySource: .secretPortal)
        #expect(store.keySource.description == "the Secret portal")
        #expect(EncryptedFileStore.secretPortal.keySource == .secretPortal)
        #expect(EncryptedFileStore.secretPortal.folderPath == EncryptedFileStore.defaultFolder(for: .secretPortal).path)
        let origin = EncryptedFileStore.defaultFolder(
            for: .secretPortal, environment: ["XDG_DATA_HOME": "/d", "CREDENTIALS_DIRECTORY": "/c"]
        ).origin
        #expect(origin == FolderOrigin(description: "$XDG_DATA_HOME/securedictionary"))
        try #require(Sandbox.current == nil, "the tests run outside a sandbox")
        #expect(store.diagnose().keyProblem.map { caseName($0) } == "portalUnavailable")
        #expect(outcome { try store.unlock() } == "portalUnavailable")
        #expect(!FileManager.default.fileExists(atPath: folder))
    }

    @Test func theDefaultFolderFollowsXDGDataHome() {
        #expect(
            EncryptedFileStore.defaultFolder(for: .secretPortal, environment: ["XDG_DATA_HOME": "/d", "HOME": "/h"]).path
                == "/d/securedictionary")
        #expect(
            EncryptedFileStore.defaultFolder(for: .secretPortal, environment: ["XDG_DATA_HOME": "rel", "HOME": "/h"]).path
                == "/h/.local/share/securedictionary")
    }

    // MARK: Moving

    @Test func moveCopiesVerifiesAndRemovesTheSource() throws {
        let source = InMemoryKeyringStore()
        let original = try SecureDictionary(name: "settings", applicationID: "org.example.App", options: .init(store: source))
        try original.setValue("s3cr3t", forKey: "token")
        #expect(try SecureDictionary.move(name: "settings", applicationID: "org.example.App", from: source, to: store()))
        #expect(try source.storedBytes(of: KeyringItem(dictionaryName: "settings", applicationID: "org.example.App")) == nil)
        #expect(try dictionary(store())["token"] == .string("s3cr3t"))
        #expect(try SecureDictionary.move(name: "settings", applicationID: "org.example.App", from: source, to: store()) == false)
    }

    @Test func moveRefusesToReplaceOtherContent() throws {
        let source = InMemoryKeyringStore()
        try SecureDictionary(name: "settings", applicationID: "org.example.App", options: .init(store: source))
            .setValue("old", forKey: "token")
        try dictionary(store()).setValue("new", forKey: "token")
        #expect(throws: SecureDictionaryError.alreadyExists(name: "org.example.App.__SecureDictionary__.settings")) {
            try SecureDictionary.move(name: "settings", applicationID: "org.example.App", from: source, to: store())
        }
        #expect(try dictionary(store())["token"] == .string("new"))
        #expect(
            try SecureDictionary(name: "settings", applicationID: "org.example.App", options: .init(store: source))["token"]
                == .string("old"))
    }

    /// One store as source and destination: an in-memory store removed the only copy (its
    /// move returned `true`), and two stores of one folder waited for the lock until the deadline
    /// (`lockHeld`).
    @Test func moveOntoTheSameStoreIsRefusedAtOnceAndChangesNothing() throws {
        let memory = InMemoryKeyringStore()
        try SecureDictionary(name: "settings", applicationID: "org.example.App", options: .init(store: memory))
            .setValue("v", forKey: "k")
        let refused = SecureDictionaryError.sameStore(name: "org.example.App.__SecureDictionary__.settings")
        #expect(throws: refused) {
            try SecureDictionary.move(name: "settings", applicationID: "org.example.App", from: memory, to: memory)
        }
        #expect(
            try SecureDictionary(name: "settings", applicationID: "org.example.App", options: .init(store: memory))["k"]
                == .string("v"))

        try dictionary(store()).setValue("v", forKey: "k")
        #expect(throws: refused) {
            try SecureDictionary.move(
                name: "settings", applicationID: "org.example.App", from: store(),
                to: EncryptedFileStore(folderPath: folder + "/", keySource: .secretPortal), timeout: .seconds(5))
        }
        #expect(try dictionary(store())["k"] == .string("v"))
    }

    @Test func moveNeverCopiesADamagedDictionary() throws {
        let source = InMemoryKeyringStore()
        let item = try KeyringItem(dictionaryName: "settings", applicationID: "org.example.App")
        source.plant(Array("bplist00garbage".utf8), for: item)
        #expect(
            outcome {
                try SecureDictionary.move(name: "settings", applicationID: "org.example.App", from: source, to: store())
            } == "corrupt")
        #expect(!FileManager.default.fileExists(atPath: folder))
        #expect(source.storedBytes(of: item) != nil)
    }

    @Test func moveKeepsTheSourceWhenTheCopyCannotBeWritten() throws {
        let source = InMemoryKeyringStore()
        try SecureDictionary(name: "settings", applicationID: "org.example.App", options: .init(store: source))
            .setValue("v", forKey: "k")
        let destination = InMemoryKeyringStore()
        destination.failCall(number: 2, with: .timedOut)  // load succeeds, store fails
        #expect(throws: SecureDictionaryError.timedOut) {
            try SecureDictionary.move(name: "settings", applicationID: "org.example.App", from: source, to: destination)
        }
        #expect(try source.storedBytes(of: KeyringItem(dictionaryName: "settings", applicationID: "org.example.App")) != nil)
    }
}
