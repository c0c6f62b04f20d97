import Foundation
import SecureDictionaryTestSupport
import Synchronization
import Testing

@testable import SecureDictionary
@testable import SecureDictionaryFileStore

/// The holes an adversarial run found in the encrypted-file stores, on real files
/// and the real kernel keyring of this process's session. Each test failed before its fix
/// (see the commit messages); the same holes across processes, as another user and through
/// `secure-dict` are in `FileStoreProcesses` and `StoreOption`.
@Suite struct FileStoreAdversarialTests {
    let base: String
    let secret = SecretBytes(copying: Array(repeating: 0x3c, count: 32))
    static let cheap = EncryptedFileStoreTests.cheap
    typealias Lines = EncryptedFileStoreTests.Lines

    init() throws {
        base = try TemporaryFolder.create("sd-adv")
    }

    private func fixed(_ folder: String) -> EncryptedFileStore {
        let secret = self.secret
        return EncryptedFileStore(folderPath: folder) { _ throws(SecureDictionaryError) in secret }
    }

    private func passphrase(
        _ folder: String, _ lines: Lines, cache: EncryptedFileStore.PassphraseCache = .none,
        cost: EncryptedFileStore.PassphraseCost = cheap
    ) -> EncryptedFileStore {
        EncryptedFileStore(
            folderPath: folder, keySource: .passphrase(.fileDescriptor(lines.descriptor), cache: cache, cost: cost))
    }

    private func dictionary(_ store: any KeyringStore, name: String = "settings", timeout: Duration = .seconds(3)) throws
        -> SecureDictionary
    {
        try SecureDictionary(name: name, applicationID: "org.example.App", options: .init(timeout: timeout, store: store))
    }

    private func file(_ folder: String, name: String = "settings") throws -> String {
        ItemFileFolder(path: folder).filePath(of: try KeyringItem(dictionaryName: name, applicationID: "org.example.App"))
    }

    // MARK: 35.2: rollback detection keyed on what the folder is, not how its path is spelled

    /// Before: keyed on the path string, so `X/`, `X//…` or `X/./…` read an old copy put
    /// back without error, and the next write through them built on it.
    @Test func anOldCopyPutBackIsRefusedThroughEverySpellingOfItsFolder() throws {
        let folder = "\(base)/store"
        try dictionary(fixed(folder)).setValue("old", forKey: "token")
        let oldCopy = try Data(contentsOf: URL(fileURLWithPath: try file(folder)))
        try dictionary(fixed(folder)).setValue("new", forKey: "token")
        try oldCopy.write(to: URL(fileURLWithPath: try file(folder)))
        try FileManager.default.createSymbolicLink(atPath: "\(base)/alias", withDestinationPath: base)
        let spellings = [
            folder, "\(folder)/", "\(base)//store", "\(base)/./store", "\(base)/store/../store", "\(base)/alias/store",
        ]
        for spelling in spellings {
            #expect(outcome { try dictionary(fixed(spelling)) } == "rolledBack", "read through \(spelling)")
            #expect(
                outcome { try dictionary(fixed(spelling)).setValue("built on the old copy", forKey: "k") } == "rolledBack",
                "write through \(spelling)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: try file(folder))) == oldCopy, "a write built on the old copy")
    }

    // MARK: 35.5: a planted scrypt cost

    /// The header of `bytes` with scrypt's cost and salt replaced (a planted header).
    private static func planting(_ bytes: [UInt8], log2N: UInt8, r: UInt8, p: UInt8) throws -> [UInt8] {
        let header = try EncryptedItemFile.header(of: bytes)
        let cost = header.headerSize - 12 - 32 - 8 - 16 - 16 - 3
        var planted = bytes
        planted[cost..<(cost + 3)] = [log2N, r, p]
        for index in (cost + 3)..<(cost + 19) { planted[index] = UInt8.random(in: 0...255) }
        return planted
    }

    /// Before: a cost of 2^19 × 8 (512 MiB, twice what the library writes at most) was
    /// stretched in full, then called a wrong passphrase.
    @Test func aPlantedCostAboveWhatTheLibraryWritesIsCorruptWithoutAStretch() throws {
        let folder = "\(base)/store"
        try dictionary(passphrase(folder, Lines(["right"]))).setValue("v", forKey: "k")
        let path = try file(folder)
        let planted = try Self.planting(Array(Data(contentsOf: URL(fileURLWithPath: path))), log2N: 19, r: 8, p: 1)
        try Data(planted).write(to: URL(fileURLWithPath: path))
        #expect(outcome { try dictionary(passphrase(folder, Lines(["right"]))) } == "corrupt")
    }

    /// A cost the store accepts, but a deadline shorter than its stretch: the call ends at
    /// its deadline with `timedOut` (before: it stretched to the end).
    @Test func aStretchLongerThanTheDeadlineEndsAtTheDeadline() throws {
        let folder = "\(base)/store"
        let standard = EncryptedFileStore.PassphraseCost.standard
        try dictionary(passphrase(folder, Lines(["right"]))).setValue("v", forKey: "k")
        let path = try file(folder)
        let planted = try Self.planting(Array(Data(contentsOf: URL(fileURLWithPath: path))), log2N: 17, r: 8, p: 1)
        try Data(planted).write(to: URL(fileURLWithPath: path))
        let store = passphrase(folder, Lines(["right"]), cost: standard)
        #expect(outcome { try dictionary(store, timeout: .milliseconds(50)) } == "timedOut")
    }

    // MARK: 35.7: one damaged file is corrupt, and never evicts the folder's key

    /// Flips one bit of the key check of `path`'s file.
    private static func flipKeyCheckBit(_ path: String) throws {
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let header = try EncryptedItemFile.header(of: bytes)
        bytes[header.headerSize - 12 - 32 - 8 - 16 + 5] ^= 0x04
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// Before: `wrongPassphrase` ("try again", with the right passphrase), and the folder's
    /// key was revoked from the kernel keyring, so the other dictionary asked again.
    @Test func aFlippedKeyCheckBitIsCorruptAndTheFolderKeepsItsKey() throws {
        let folder = "\(base)/store"
        let kept = EncryptedFileStore.PassphraseCache.kernelKeyring(timeout: .seconds(60))
        let writer = passphrase(folder, Lines(["right"]), cache: kept)
        try dictionary(writer, name: "a").setValue("first", forKey: "k")
        try dictionary(writer, name: "b").setValue("second", forKey: "k")
        defer { writer.forgetKey() }
        try Self.flipKeyCheckBit(try file(folder, name: "a"))
        // A new store, which finds the key in the kernel keyring (and has the passphrase to give).
        #expect(outcome { try dictionary(passphrase(folder, Lines(["right"]), cache: kept), name: "a") } == "corrupt")
        // The other dictionary of the folder opens without asking: its key was kept.
        #expect(try dictionary(passphrase(folder, Lines([]), cache: kept), name: "b")["k"] == .string("second"))
    }

    /// A new dictionary takes the folder's salt from another file: a damaged one is passed
    /// over, not a reason to refuse the write.
    @Test func aDamagedFileDoesNotKeepANewDictionaryFromBeingWritten() throws {
        let folder = "\(base)/store"
        let kept = EncryptedFileStore.PassphraseCache.kernelKeyring(timeout: .seconds(60))
        let writer = passphrase(folder, Lines(["right"]), cache: kept)
        defer { writer.forgetKey() }
        try dictionary(writer, name: "a").setValue("first", forKey: "k")
        try dictionary(writer, name: "b").setValue("second", forKey: "k")
        let first = try [file(folder, name: "a"), file(folder, name: "b")].min()!  // the one the store looks at first
        try Self.flipKeyCheckBit(first)
        try dictionary(passphrase(folder, Lines([]), cache: kept), name: "c").setValue("third", forKey: "k")
        #expect(try dictionary(passphrase(folder, Lines([]), cache: kept), name: "c")["k"] == .string("third"))
    }

    @Test func aFlippedKeyCheckBitOfALoneFileIsCorruptWhenThePassphraseIsTyped() throws {
        let folder = "\(base)/store"
        try dictionary(passphrase(folder, Lines(["right"]))).setValue("v", forKey: "k")
        try Self.flipKeyCheckBit(try file(folder))
        #expect(outcome { try dictionary(passphrase(folder, Lines(["right"]))) } == "corrupt")
        // A wrong passphrase is still told apart.
        #expect(outcome { try dictionary(passphrase(folder, Lines(["wrong"]))) } == "wrongPassphrase")
    }

    @Test func aFlippedKeyCheckBitUnderAMasterSecretIsCorruptNotAnotherKey() throws {
        let folder = "\(base)/store"
        try dictionary(fixed(folder)).setValue("v", forKey: "k")
        try Self.flipKeyCheckBit(try file(folder))
        #expect(outcome { try dictionary(fixed(folder)) } == "corrupt")
    }

    /// Each of the 128 bits of the key check, flipped alone, under a passphrase and under a
    /// master secret. Before: `wrongPassphrase` and `wrongKey` every time.
    @Test func everyFlippedBitOfAKeyCheckIsCorrupt() throws {
        let folder = "\(base)/store"
        let lines = Lines(Array(repeating: "right", count: 130))
        let stores: [(String, () -> any KeyringStore)] = [
            ("passphrase", { passphrase(folder, lines) }), ("master secret", { fixed(folder) }),
        ]
        for (label, store) in stores {
            try? FileManager.default.removeItem(atPath: folder)
            try dictionary(store()).setValue("v", forKey: "k")
            let path = try file(folder)
            let good = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            let start = try EncryptedItemFile.header(of: good).headerSize - 12 - 32 - 8 - 16
            var outcomes: [String: Int] = [:]
            for bit in 0..<128 {
                var bad = good
                bad[start + bit / 8] ^= UInt8(1 << (bit % 8))
                try Data(bad).write(to: URL(fileURLWithPath: path))
                outcomes[outcome { try dictionary(store()) }, default: 0] += 1
            }
            #expect(outcomes == ["corrupt": 128], "\(label): \(outcomes)")
            try Data(good).write(to: URL(fileURLWithPath: path))
            #expect(try dictionary(store())["k"] == .string("v"), "\(label)")
        }
    }

    // MARK: 35.9: the Secret portal store outside a sandbox

    /// Before: a dictionary without a file opened empty, and a refused write created the folder.
    @Test func outsideASandboxThePortalStoreIsUnavailableForEveryCall() throws {
        try #require(Sandbox.current == nil, "the tests run outside a sandbox")
        let folder = "\(base)/portal"
        let store = EncryptedFileStore(folderPath: folder, keySource: .secretPortal)
        #expect(outcome { try dictionary(store) } == "portalUnavailable")
        #expect(outcome { try dictionary(store).setValue("v", forKey: "k") } == "portalUnavailable")
        #expect(
            outcome {
                try store.store(
                    SecretBytes(copying: [1]), for: KeyringItem(dictionaryName: "x", applicationID: "org.example.App"),
                    timeout: .seconds(1))
            }
                == "portalUnavailable")
        #expect(
            outcome { try store.listItems(applicationID: nil, collection: .default, timeout: .seconds(1)) }
                == "portalUnavailable")
        #expect(!FileManager.default.fileExists(atPath: folder), "a refused write created the folder")
    }

    // MARK: 35.12: lockHeld names the process that holds the lock

    /// Before: the pid in `writer.pid`, the last writer's (here this very process), not the
    /// holder's.
    @Test func lockHeldNamesTheProcessHoldingTheFolder() throws {
        let folder = "\(base)/store"
        try dictionary(fixed(folder)).setValue("v", forKey: "k")  // this process wrote last
        let holder = try LiveChild("/usr/bin/flock", ["--no-fork", folder, "sleep", "60"])  // the holder is the process named
        defer {
            holder.kill(SIGKILL)  // SIGTERM may be ignored by what the runner started
            holder.finish()
        }
        // Until the folder is locked (observed, not slept on).
        let descriptor = open(folder, O_RDONLY | O_DIRECTORY)
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
            flock(descriptor, LOCK_UN)
            usleep(5_000)
        }
        let settings = try dictionary(fixed(folder), timeout: .milliseconds(300))
        #expect {
            try settings.setValue("w", forKey: "k")
        } throws: { error in
            guard case .lockHeld(let pid, let command) = error as? SecureDictionaryError else { return false }
            return pid == Int(holder.pid) && command == "sleep"
        }
    }

    // MARK: 35.13: temporaries of killed writers

    /// Before: `.NAME.RANDOM.tmp` files of killed writers stayed forever.
    @Test func aWriteRemovesTheTemporariesOfKilledWritersAndNothingElse() throws {
        let folder = "\(base)/store"
        try dictionary(fixed(folder)).setValue("v", forKey: "k")
        let name = URL(fileURLWithPath: try file(folder)).lastPathComponent
        let stale = [".\(name).123456789.tmp", ".0123456789abcdef0123456789abcdef.sdict.42.tmp"]
        let others = [".other.tmp", "notes.tmp", ".\(name).tmp", "\(name).1.tmp"]
        for entry in stale + others { try Data([1, 2, 3]).write(to: URL(fileURLWithPath: "\(folder)/\(entry)")) }
        try dictionary(fixed(folder)).setValue("w", forKey: "k")
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: folder))
        for entry in stale { #expect(!left.contains(entry), "\(entry) left") }
        for entry in others { #expect(left.contains(entry), "\(entry) removed") }
    }

    // MARK: 36.6: a systemd credential of the wrong size

    /// Before: told to add `LoadCredentialEncrypted=` to the unit, which already has it.
    @Test func aCredentialOfTheWrongSizeIsToldToMakeANewOne() throws {
        let directory = "\(base)/credentials"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data("12345".utf8).write(to: URL(fileURLWithPath: "\(directory)/app-key"))
        #expect {
            try SystemdCredential.read(named: "app-key", environment: ["CREDENTIALS_DIRECTORY": directory])
        } throws: { error in
            let text = "\(error)"
            return text.contains("systemd-creds encrypt --name=app-key") && text.contains("head -c 32 /dev/urandom")
                && !text.contains("LoadCredentialEncrypted") && text.count <= 200
        }
    }

    /// Before: a service with a credential but no `StateDirectory=` kept its files in
    /// `$XDG_DATA_HOME` silently, and then found "no such dictionary" where it looked.
    @Test func aServiceWithoutAStateDirectoryIsToldWhereItsFilesAreAndTheFix() {
        let service = ["CREDENTIALS_DIRECTORY": "/run/credentials/app.service", "XDG_DATA_HOME": "/d"]
        let origin = EncryptedFileStore.defaultFolder(for: .systemdCredential(), environment: service).origin
        #expect(origin.description == "$XDG_DATA_HOME/securedictionary")
        #expect(origin.warning?.contains("/d/securedictionary") == true && origin.warning?.contains("StateDirectory=") == true)
        // With StateDirectory=, a person's passphrase, or a folder given: nothing to fix.
        let withState = service.merging(["STATE_DIRECTORY": "/var/lib/app"]) { _, new in new }
        #expect(EncryptedFileStore.defaultFolder(for: .systemdCredential(), environment: withState).origin.warning == nil)
        #expect(EncryptedFileStore.defaultFolder(for: .passphrase(), environment: service).origin.warning == nil)
        let store = EncryptedFileStore(folderPath: "\(base)/files", keySource: .systemdCredential())
        #expect(store.folderOrigin.warning == nil)
        #expect(store.diagnose().folderOrigin.description == "the folder given to the store")
    }
}

extension FileStoreAdversarialTests {
    /// A read beside a writer is never a rollback: before, a load read the file, then the
    /// record, so a write landing in between (the new file recorded after the read) made a
    /// reader of the old, genuine file throw `rolledBack` (once in a CI run of Debian 13's
    /// sandboxed writers, `SecretPortal.processesOfTheAppLoseNoWrite`). Threads of one process
    /// share the in-process record as processes share the kernel one.
    @Test func aReadBesideAWriterIsNeverARollback() throws {
        let folder = base + "/race"
        let writer = fixed(folder)
        let reader = fixed(folder)
        let item = try KeyringItem(dictionaryName: "settings", applicationID: "org.example.App")
        let blob = try BinaryPropertyList.encode(["k": "v"], limits: .default)
        try writer.store(SecretBytes(copying: blob), for: item, timeout: .seconds(3))
        let writing = Mutex(true)
        let rollbacks = Mutex(0)
        let reads = Mutex(0)
        let thread = Thread {
            while writing.withLock({ $0 }) {
                do throws(SecureDictionaryError) {
                    _ = try reader.load(item, timeout: .seconds(3))
                    reads.withLock { $0 += 1 }
                } catch .store(FileStoreError.rolledBack as FileStoreError) {
                    rollbacks.withLock { $0 += 1 }
                } catch {}
            }
        }
        thread.start()
        for _ in 0..<400 { try writer.store(SecretBytes(copying: blob), for: item, timeout: .seconds(3)) }
        writing.withLock { $0 = false }
        while !thread.isFinished { usleep(1_000) }
        #expect(reads.withLock { $0 } > 0)
        #expect(rollbacks.withLock { $0 } == 0, "\(rollbacks.withLock { $0 }) of \(reads.withLock { $0 }) reads were rollbacks")
    }
}
