import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary
@testable import SecureDictionaryFileStore

/// The key sources of ``EncryptedFileStore`` in one process, with passphrases
/// given on a pipe (the terminal, the kernel keyring shared between processes and real
/// systemd credentials are in KeyringIntegrationTests' `FileStoreProcesses`).
@Suite struct EncryptedFileStoreTests {
    let folder: String
    /// Cheap scrypt for tests (the header keeps whatever cost a file was written with).
    static let cheap = EncryptedFileStore.PassphraseCost(log2N: 8, blockSize: 8, parallelism: 1)

    init() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("sd-files-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        folder = base + "/securedictionary"
    }

    /// A pipe whose read end holds `lines`, one passphrase each, then end of file. Never
    /// closed: a store keeps only the descriptor's number, which must not be reused.
    final class Lines: Sendable {
        let descriptor: Int32

        init(_ lines: [String]) {
            var ends: [Int32] = [-1, -1]
            pipe(&ends)
            let text = Array(lines.map { $0 + "\n" }.joined().utf8)
            _ = text.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }
            close(ends[1])
            descriptor = ends[0]
        }
    }

    private func store(_ lines: Lines, cache: EncryptedFileStore.PassphraseCache = .none) -> EncryptedFileStore {
        EncryptedFileStore(
            folderPath: folder, keySource: .passphrase(.fileDescriptor(lines.descriptor), cache: cache, cost: Self.cheap))
    }

    private func dictionary(_ store: EncryptedFileStore, name: String = "settings") throws -> SecureDictionary {
        try SecureDictionary(name: name, applicationID: "org.example.App", options: .init(store: store))
    }

    private func fileBytes(_ name: String = "settings") throws -> [UInt8] {
        let item = try KeyringItem(dictionaryName: name, applicationID: "org.example.App")
        return Array(try Data(contentsOf: URL(fileURLWithPath: ItemFileFolder(path: folder).filePath(of: item))))
    }

    /// A relative folder is the one below the current folder, as the caller meant: it once
    /// became one below `/` (its folders made from `/` down), and the write then failed.
    @Test func aRelativeFolderIsTheOneBelowTheCurrentFolder() throws {
        let relative = ".build/sd-relative-\(UUID().uuidString)"
        let current = FileManager.default.currentDirectoryPath
        let strayParent = !FileManager.default.fileExists(atPath: "/.build")
        defer {
            try? FileManager.default.removeItem(atPath: "\(current)/\(relative)")
            try? FileManager.default.removeItem(atPath: strayParent ? "/.build" : "/\(relative)")
        }
        let store = EncryptedFileStore(
            folderPath: "\(relative)/files", keySource: .passphrase(.fileDescriptor(Lines(["pw"]).descriptor), cost: Self.cheap))
        #expect(store.folderPath == "\(current)/\(relative)/files")
        try dictionary(store).setValue("v", forKey: "k")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: "\(current)/\(relative)/files").contains {
                $0.hasSuffix(".sdict")
            })
        #expect(!FileManager.default.fileExists(atPath: "/\(relative)"))
    }

    /// A relative folder given to `DictionaryCopies.find` is the one below the current folder,
    /// as for the store that wrote it: its copies were listed by their relative path, which
    /// names another file from any other folder, and the same folder given both ways was
    /// searched twice, its one file reported as a dictionary split in two.
    @Test func copiesInARelativeFolderAreListedOnceByTheirAbsolutePath() throws {
        let relative = ".build/sd-relative-\(UUID().uuidString)"
        let current = FileManager.default.currentDirectoryPath
        defer { try? FileManager.default.removeItem(atPath: "\(current)/\(relative)") }
        let store = EncryptedFileStore(
            folderPath: relative, keySource: .passphrase(.fileDescriptor(Lines(["pw"]).descriptor), cost: Self.cheap))
        try dictionary(store).setValue("v", forKey: "k")
        let found = DictionaryCopies.find(
            applicationID: "org.example.App", dictionaryName: "settings", folders: [relative, "\(current)/\(relative)"],
            timeout: .seconds(2), environment: ["HOME": folder])
        let item = try KeyringItem(dictionaryName: "settings", applicationID: "org.example.App")
        let file = ItemFileFolder(path: "\(current)/\(relative)").filePath(of: item)
        let files = found.copies.filter { if case .file = $0.place { true } else { false } }
        #expect(files.map(\.place) == [.file(path: file)], "\(found.copies)")
        #expect(found.splits.isEmpty)
    }

    /// A file moved by hand under another item's name is no dictionary of either name: a read
    /// of its own item finds no file, one of the name it is under is `corrupt`, and so no call
    /// lists it (`listItems` once did, while `DictionaryCopies` and `changePassphrase` skipped it).
    @Test func aFileUnderAnotherItemsNameIsListedByNoCall() throws {
        let writer = store(Lines(["pw"]))
        try dictionary(writer, name: "a").setValue("v", forKey: "k")
        let (a, b) = try (
            KeyringItem(dictionaryName: "a", applicationID: "org.example.App"),
            KeyringItem(dictionaryName: "b", applicationID: "org.example.App")
        )
        let files = ItemFileFolder(path: folder)
        try FileManager.default.moveItem(atPath: files.filePath(of: a), toPath: files.filePath(of: b))
        #expect(try writer.load(a, timeout: .seconds(3)) == nil)
        #expect(outcome { _ = try writer.load(b, timeout: .seconds(3)) } == "corrupt")
        #expect(try writer.listItems(applicationID: nil, collection: .default, timeout: .seconds(3)).isEmpty)
        let found = DictionaryCopies.find(
            applicationID: "org.example.App", folders: [folder], timeout: .seconds(2), environment: ["HOME": folder])
        #expect(found.copies.allSatisfy { $0.place != .file(path: files.filePath(of: b)) }, "\(found.copies)")
        #expect(try store(Lines(["new"])).changePassphrase() == 0)
    }

    // MARK: scrypt

    /// RFC 7914, section 12, the second vector: scrypt("password", "NaCl", N = 1024, r = 8,
    /// p = 16); 32 bytes are the first 32 of its 64.
    @Test func scryptGivesTheRFCVector() {
        var key = [UInt8](repeating: 0, count: 32)
        let done = Array("password".utf8).withUnsafeBytes { password in
            key.withUnsafeMutableBytes {
                ScryptParameters.scrypt(password, salt: Array("NaCl".utf8), log2N: 10, r: 8, p: 16, into: $0)
            }
        }
        #expect(done)
        let expected = "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"
        #expect(key.map { String(format: "%02x", $0) }.joined() == expected)
    }

    @Test func parametersFromAFileAreBounded() {
        let salt = [UInt8](repeating: 1, count: 16)
        #expect(throws: SecureDictionaryError.self) { try ScryptParameters(log2N: 30, r: 8, p: 1, salt: salt) }  // 128 GiB
        #expect(throws: SecureDictionaryError.self) { try ScryptParameters(log2N: 20, r: 16, p: 1, salt: salt) }  // 2 GiB
        #expect(throws: SecureDictionaryError.self) { try ScryptParameters(log2N: 20, r: 8, p: 255, salt: salt) }  // work
        #expect(throws: SecureDictionaryError.self) { try ScryptParameters(log2N: 0, r: 8, p: 1, salt: salt) }
        #expect(throws: SecureDictionaryError.self) { try ScryptParameters(log2N: 10, r: 0, p: 1, salt: salt) }
        #expect((try? ScryptParameters(log2N: 17, r: 8, p: 1, salt: salt)) != nil)
    }

    // MARK: A passphrase

    /// A passphrase of the longest length is read whatever its line break, and one byte more
    /// is refused with either: a CR LF line of 1,024 bytes was once refused as too long (the
    /// CR counted before it was dropped).
    @Test func theLongestPassphraseIsReadWithEitherLineBreak() throws {
        let longest = String(repeating: "p", count: PassphraseReader.maximumLength)
        for line in [longest, longest + "\r"] {
            let read = try PassphraseReader.read(.fileDescriptor(Lines([line]).descriptor), prompt: "")
            #expect(read.array == Array(longest.utf8))
        }
        for line in [longest + "p", longest + "p\r"] {
            #expect(throws: SecureDictionaryError.self) {
                try PassphraseReader.read(.fileDescriptor(Lines([line]).descriptor), prompt: "")
            }
        }
    }

    @Test func aPassphraseRoundTripsAndItsParametersAreInTheHeader() throws {
        try dictionary(store(Lines(["correct horse"]))).setValue("canary-41d2", forKey: "token")
        #expect(try dictionary(store(Lines(["correct horse"])))["token"] == .string("canary-41d2"))
        let file = try fileBytes()
        #expect(file.firstRange(of: Array("canary-41d2".utf8)) == nil)
        #expect(file.firstRange(of: Array("correct horse".utf8)) == nil)
        let header = try EncryptedItemFile.header(of: file)
        #expect(header.version == 2)
        #expect(header.key?.kind == .passphrase)
        #expect(header.key?.scrypt?.log2N == 8 && header.key?.scrypt?.r == 8 && header.key?.scrypt?.p == 1)
        #expect(header.key?.scrypt?.salt.count == 16)
    }

    @Test func aWrongPassphraseIsTypedNeverCorruptNorEmpty() throws {
        try dictionary(store(Lines(["right"]))).setValue("v", forKey: "k")
        let wrong = store(Lines(["wrong", "right"]))
        #expect(outcome { try dictionary(wrong) } == "wrongPassphrase")
        // The wrong one was kept nowhere: the same store asks again, and the right one opens.
        #expect(try dictionary(wrong)["k"] == .string("v"))
    }

    @Test func noPassphraseIsTyped() throws {
        try dictionary(store(Lines(["right"]))).setValue("v", forKey: "k")
        #expect(outcome { try dictionary(store(Lines([]))) } == "passphraseUnavailable")
        #expect(outcome { try dictionary(store(Lines([""]))) } == "passphraseUnavailable")
        let closed = EncryptedFileStore(
            folderPath: folder, keySource: .passphrase(.fileDescriptor(987), cache: .none, cost: Self.cheap))
        #expect(outcome { try dictionary(closed) } == "passphraseUnavailable")
    }

    @Test func oneFolderHasOnePassphraseAndOneSalt() throws {
        let lines = Lines(["only once"])
        let first = store(lines)
        try dictionary(first, name: "a").setValue(1, forKey: "k")
        try dictionary(first, name: "b").setValue(2, forKey: "k")
        // A new store (nothing in memory) writing a third file reuses the folder's salt.
        try dictionary(store(Lines(["only once"])), name: "c").setValue(3, forKey: "k")
        let salts = try ["a", "b", "c"].map { try EncryptedItemFile.header(of: fileBytes($0)).key?.scrypt?.salt }
        #expect(Set(salts).count == 1)
        #expect(salts.allSatisfy { $0 != nil })
    }

    @Test func changingThePassphraseReencryptsEveryFileVerified() throws {
        let before = store(Lines(["old one"]))
        try dictionary(before, name: "a").setValue("first", forKey: "k")
        try dictionary(before, name: "b").setValue("second", forKey: "k")
        let saltBefore = try EncryptedItemFile.header(of: fileBytes("a")).key?.scrypt?.salt
        let changer = store(Lines(["old one", "new one"]))
        #expect(try changer.changePassphrase() == 2)
        #expect(try EncryptedItemFile.header(of: fileBytes("a")).key?.scrypt?.salt != saltBefore)
        #expect(outcome { try dictionary(store(Lines(["old one"])), name: "a") } == "wrongPassphrase")
        let after = store(Lines(["new one"]))
        #expect(try dictionary(after, name: "a")["k"] == .string("first"))
        #expect(try dictionary(after, name: "b")["k"] == .string("second"))
    }

    @Test func aWrongOldPassphraseChangesNothing() throws {
        try dictionary(store(Lines(["old one"]))).setValue("v", forKey: "k")
        let file = try fileBytes()
        #expect(outcome { try store(Lines(["not it", "new one"])).changePassphrase() } == "wrongPassphrase")
        #expect(try fileBytes() == file)
    }

    @Test func everyFlippedBitAndEveryTruncationOfAPassphraseFileIsATypedError() throws {
        try dictionary(store(Lines(["pass"]))).setValue("v", forKey: "k")
        let good = try fileBytes()
        let item = try KeyringItem(dictionaryName: "settings", applicationID: "org.example.App")
        var outcomes: [String: Int] = [:]
        let lines = Lines(Array(repeating: "pass", count: good.count * 2 + 10))
        for index in good.indices {
            var bad = good
            bad[index] ^= 0x10
            try Data(bad).write(to: URL(fileURLWithPath: ItemFileFolder(path: folder).filePath(of: item)))
            outcomes[outcome { try dictionary(store(lines)) }, default: 0] += 1
        }
        for length in stride(from: 0, to: good.count, by: 7) {
            try Data(good[..<length]).write(to: URL(fileURLWithPath: ItemFileFolder(path: folder).filePath(of: item)))
            outcomes[outcome { try dictionary(store(lines)) }, default: 0] += 1
        }
        // Nothing opens. A changed salt or cost reads as a wrong passphrase (the key check
        // cannot tell them apart); everything else is corrupt, another version, or older.
        #expect(outcomes["ok"] == nil, "\(outcomes)")
        #expect(
            Set(outcomes.keys).isSubset(of: ["corrupt", "unsupportedFormatVersion", "wrongPassphrase", "wrongKey", "rolledBack"]),
            "\(outcomes)")
    }

    @Test func aPassphraseStoreDoesNotOpenACredentialsFile() throws {
        let secret = SecretBytes(copying: Array(repeating: 7, count: 32))
        let other = EncryptedFileStore(folderPath: folder) { _ throws(SecureDictionaryError) in secret }
        try SecureDictionary(name: "settings", applicationID: "org.example.App", options: .init(store: other))
            .setValue("v", forKey: "k")
        #expect(outcome { try dictionary(store(Lines(["x"]))) } == "wrongKey")
    }

    // MARK: A systemd credential

    @Test func aMissingCredentialIsNamed() throws {
        #expect(
            throws: SecureDictionaryError.store(
                FileStoreError.credentialUnavailable(
                    name: "app-key",
                    reason: "$CREDENTIALS_DIRECTORY is not set: add 'LoadCredentialEncrypted=app-key' to the service's unit"))
        ) {
            try SystemdCredential.read(named: "app-key", environment: [:])
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sd-creds-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        #expect(
            throws: SecureDictionaryError.store(
                FileStoreError.credentialUnavailable(
                    name: "app-key",
                    reason: "no such file in $CREDENTIALS_DIRECTORY: add 'LoadCredentialEncrypted=app-key' to the service's unit")
            )
        ) {
            try SystemdCredential.read(named: "app-key", environment: ["CREDENTIALS_DIRECTORY": directory])
        }
        try Data("short password".utf8).write(to: URL(fileURLWithPath: "\(directory)/app-key"))
        #expect {
            try SystemdCredential.read(named: "app-key", environment: ["CREDENTIALS_DIRECTORY": directory])
        } throws: { error in
            guard
                case .store(FileStoreError.credentialUnavailable("app-key", let reason) as FileStoreError) = error
                    as? SecureDictionaryError
            else { return false }
            return reason.contains("head -c 32 /dev/urandom")
        }
        #expect(throws: SecureDictionaryError.self) {
            try SystemdCredential.read(named: "../app-key", environment: ["CREDENTIALS_DIRECTORY": directory])
        }
    }

    @Test func theDefaultFolders() {
        let credential = EncryptedFileStore.KeySource.systemdCredential()
        #expect(
            EncryptedFileStore.defaultFolder(for: credential, environment: ["STATE_DIRECTORY": "/var/lib/app:/var/lib/b"]).path
                == "/var/lib/app/securedictionary")
        #expect(
            EncryptedFileStore.defaultFolder(for: credential, environment: ["HOME": "/home/u"]).path
                == "/home/u/.local/share/securedictionary")
        #expect(
            EncryptedFileStore.defaultFolder(
                for: .passphrase(), environment: ["STATE_DIRECTORY": "/s", "XDG_DATA_HOME": "/d"]
            ).path == "/d/securedictionary")
    }
}
