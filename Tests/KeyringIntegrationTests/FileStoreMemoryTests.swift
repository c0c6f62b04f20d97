import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionaryFileStore

#if canImport(Glibc)
    import Glibc
#endif

/// The encrypted-file stores' secrets live only in buffers that are wiped. A process
/// (`sd-test-writer hygiene`) uses a credential store and a passphrase store, writes and
/// reads with both, forgets their keys and releases everything; ``CoreScan`` then searches
/// what a core of it would hold for 16-byte slices of each secret: the credential, the
/// passphrase, the key scrypt made of it, and the per-file keys HKDF made of both. Target:
/// 0 in the process's memory (copies in dead stack frames are counted apart, as the
/// reliability suite does). The control (everything kept) must find the master secrets in
/// memory, or the scan proves nothing.
@Suite(.enabled(if: !PrivateKeyring.available || PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct FileStoreMemory {
    @Test func noKeyOfAFileStoreIsLeftInMemoryOnceForgotten() throws {
        let control = try scan(mode: "control")
        // The control holds a copy of the credential in ordinary memory; the stores keep theirs
        // (and the derived key) in locked pages that the core leaves out.
        #expect(control.inMemory["credential", default: 0] > 0, "the control found no credential: the scan is void \(control)")
        #expect(control.inMemory["derived key", default: 0] == 0, "a kept derived key is in the core: \(control)")
        let forgotten = try scan(mode: "forget")
        #expect(forgotten.inMemory.values.allSatisfy { $0 == 0 }, "left in memory: \(forgotten.inMemory)")
        print(
            "file store memory: control \(control.inMemory) (dead frames \(control.onStacks)); after forgetKey and "
                + "release \(forgotten.inMemory) (dead frames \(forgotten.onStacks))")
    }

    private func scan(mode: String) throws -> CoreScan {
        let processes = try FileStoreProcesses()
        let base = processes.base
        let credential = try processes.makeCredential(in: "\(base)/credentials")
        let passphrase = "passphrase-" + (0..<6).map { _ in UUID().uuidString.prefix(4) }.joined()
        let app = "it.memory.\(UUID().uuidString)"

        let process = try LiveChild(
            KeyringHarness.writer, ["hygiene", app, mode],
            environment: ["CREDENTIALS_DIRECTORY": "\(base)/credentials", "SD_TEST_WRITER_FOLDER": "\(base)/files"])
        defer {
            try? process.send("done")
            process.finish(timeout: .seconds(60))
        }
        try process.send(passphrase)
        let printed = process.nextLine(timeout: .seconds(120)) ?? ""
        try #require(printed.hasPrefix("ready"), "\(printed)")

        // The secrets, as the stores derive them from the files they wrote.
        var secrets: [String: [UInt8]] = ["credential": credential, "passphrase": Array(passphrase.utf8)]
        let master = SecretBytes(copying: credential)
        let credentialFile = try processes.itemFile(in: "\(base)/files/credential")
        secrets["credential file key"] = try fileKey(of: credentialFile, master: master)
        let passphraseFile = try processes.itemFile(in: "\(base)/files/passphrase")
        let header = try EncryptedItemFile.header(of: Array(Data(contentsOf: URL(fileURLWithPath: passphraseFile))))
        let derived = try #require(header.key?.scrypt).derive(SecretBytes(copying: Array(passphrase.utf8)))
        secrets["derived key"] = derived.array
        secrets["passphrase file key"] = try fileKey(of: passphraseFile, master: derived)

        return try CoreScan.take(of: process.pid, secrets: secrets)
    }

    private func fileKey(of file: String, master: SecretBytes) throws -> [UInt8] {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        let header = try EncryptedItemFile.header(of: bytes)
        let saltEnd = header.headerSize - EncryptedItemFile.nonceSize
        let salt = Array(bytes[(saltEnd - EncryptedItemFile.saltSize)..<saltEnd])
        return EncryptedItemFile.hkdf(master, salt: salt, info: EncryptedItemFile.keyLabel, count: 32)
    }
}
