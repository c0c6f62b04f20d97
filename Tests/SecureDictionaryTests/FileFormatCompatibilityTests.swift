import Crypto
import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary
@testable import SecureDictionaryFileStore

/// The file format's first version, as the Secret portal store wrote it with
/// swift-crypto's AES.GCM and HKDF, is still read by the encryption that now runs in
/// CFileStoreShim (BoringSSL directly), and the next write replaces it by version 2: the two
/// implementations agree byte for byte on the same construction.
@Suite struct FileFormatCompatibility {
    @Test func aVersion1FileWrittenBySwiftCryptoIsReadAndRewrittenAsVersion2() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sd-v1-\(UUID().uuidString)").path
        let master = Array(repeating: UInt8(0x5a), count: 64)
        let item = try KeyringItem(dictionaryName: "settings", applicationID: "org.example.App")
        let blob = try BinaryPropertyList.encode(["token": "from version 1"], limits: PropertyListLimits(maximumSize: 1 << 20))
        // Version 1, as the Secret portal's store wrote it with swift-crypto.
        let identity = EncryptedItemFile.identity(of: item)
        let salt = (0..<32).map { _ in UInt8.random(in: 0...255) }
        let nonce = AES.GCM.Nonce()
        let header =
            EncryptedItemFile.magic + [1, UInt8(identity.count >> 8), UInt8(identity.count & 0xff)] + identity + salt
            + Array(nonce)
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: master), salt: salt, info: EncryptedItemFile.keyLabel, outputByteCount: 32)
        let box = try AES.GCM.seal(blob, using: key, nonce: nonce, authenticating: header)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        chmod(folder, 0o700)
        try Data(header + box.ciphertext + box.tag).write(
            to: URL(fileURLWithPath: ItemFileFolder(path: folder).filePath(of: item)))

        let secret = SecretBytes(copying: master)
        let store = EncryptedFileStore(folderPath: folder) { _ throws(SecureDictionaryError) in secret }
        let settings = try SecureDictionary(name: "settings", applicationID: "org.example.App", options: .init(store: store))
        #expect(settings["token"] == .string("from version 1"))
        try settings.setValue("now version 2", forKey: "other")
        let rewritten = try Data(contentsOf: URL(fileURLWithPath: ItemFileFolder(path: folder).filePath(of: item)))
        #expect(try EncryptedItemFile.header(of: Array(rewritten)).version == 2)
        // And swift-crypto opens what CFileStoreShim sealed.
        let parsed = try EncryptedItemFile.header(of: Array(rewritten))
        let bytes = Array(rewritten)
        let saltEnd = parsed.headerSize - 12
        let newKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: master), salt: bytes[(saltEnd - 32)..<saltEnd], info: EncryptedItemFile.keyLabel,
            outputByteCount: 32)
        let sealed = try AES.GCM.SealedBox(
            nonce: AES.GCM.Nonce(data: bytes[saltEnd..<parsed.headerSize]),
            ciphertext: bytes[parsed.headerSize..<(bytes.count - 16)],
            tag: bytes[(bytes.count - 16)...])
        let opened = try AES.GCM.open(sealed, using: newKey, authenticating: bytes[..<parsed.headerSize])
        #expect(try BinaryPropertyListCoding.decode(opened)["other"] == .string("now version 2"))
        // The key check is HKDF-SHA256 of the master secret with no salt.
        let check = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: master), salt: [UInt8](), info: EncryptedItemFile.checkLabel, outputByteCount: 16
        )
        #expect(parsed.key?.check == check.withUnsafeBytes { Array($0) })
    }
}
