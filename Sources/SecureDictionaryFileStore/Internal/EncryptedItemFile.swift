import Crypto
import SecureDictionary

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// The content of one item's file on the Secret portal path: the dictionary's blob,
/// encrypted and authenticated with a key derived from the app's master secret.
///
/// ```swift
/// let file = try EncryptedItemFile.seal(blob, for: item, masterSecret: secret)
/// let blob = try EncryptedItemFile.open(file, for: item, masterSecret: secret)
/// ```
///
/// Layout (integers big-endian), every byte before the ciphertext authenticated as
/// associated data, so the header cannot be changed or moved to another item's file:
///
/// | bytes | field |
/// | --- | --- |
/// | 8 | magic `SDCRYPT` and a zero byte |
/// | 1 | format version, 1 |
/// | 2 | length of the identity |
/// | n | identity: collection alias, application ID and dictionary name, UTF-8, NUL-separated |
/// | 32 | salt, random per write |
/// | 12 | AES-GCM nonce, random per write |
/// | rest − 16 | ciphertext |
/// | 16 | tag |
///
/// The key is HKDF-SHA256 of the master secret with the salt and the label
/// `io.github.securedictionary.file.v1`: a new key for every write, so a random nonce never
/// meets the same key twice. The identity is in clear (item names are not secret; the
/// keyring shows them too) so that listing needs no key.
enum EncryptedItemFile {
    static let magic: [UInt8] = Array("SDCRYPT".utf8) + [0]
    static let version: UInt8 = 1
    static let saltSize = 32
    static let nonceSize = 12
    static let tagSize = 16
    static let keyLabel = Array("io.github.securedictionary.file.v1".utf8)
    /// The largest file read: D-Bus cannot carry a larger secret either, and a dictionary's
    /// own size cap is far below it.
    static let maximumFileSize = (1 << 26) + 4096

    /// The identity of `item` as stored in its file's header.
    static func identity(of item: KeyringItem) -> [UInt8] {
        Array(item.collection.alias.utf8) + [0] + Array(item.applicationID.utf8) + [0] + Array(item.dictionaryName.utf8)
    }

    /// Encrypts `blob` for `item`.
    ///
    /// - Throws: ``SecureDictionaryError/keyring(domain:code:message:)`` if encryption fails
    ///   (it does not with valid sizes).
    static func seal(_ blob: [UInt8], for item: KeyringItem, masterSecret: SecretBytes) throws(SecureDictionaryError)
        -> [UInt8]
    {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<saltSize).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let nonce = AES.GCM.Nonce()
        let header = self.header(identity: identity(of: item), salt: salt, nonce: Array(nonce))
        do {
            let box = try AES.GCM.seal(blob, using: key(masterSecret, salt: salt), nonce: nonce, authenticating: header)
            return header + box.ciphertext + box.tag
        } catch {
            throw .keyring(domain: "SecureDictionary.EncryptedItemFile", code: 1, message: "encryption failed: \(error)")
        }
    }

    /// Decrypts the file `bytes` of `item`. The caller owns (and should wipe) the result.
    ///
    /// - Throws: ``SecureDictionaryError/corrupt(reason:)`` when the file is not in this
    ///   format, belongs to another item, or fails authentication (changed, damaged, or
    ///   written under another master secret: another app, or a reset portal secret);
    ///   ``SecureDictionaryError/unsupportedFormatVersion(_:)`` for a newer format.
    static func open(_ bytes: [UInt8], for item: KeyringItem, masterSecret: SecretBytes) throws(SecureDictionaryError)
        -> [UInt8]
    {
        let parsed = try parse(bytes)
        guard parsed.identity.elementsEqual(identity(of: item)) else {
            throw .corrupt(reason: "the encrypted file belongs to another item")
        }
        let headerEnd = parsed.ciphertext.lowerBound
        let tagStart = bytes.count - tagSize
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: bytes[parsed.nonce]), ciphertext: bytes[headerEnd..<tagStart],
                tag: bytes[tagStart...])
            var plain = try AES.GCM.open(
                box, using: key(masterSecret, salt: bytes[parsed.salt]), authenticating: bytes[..<headerEnd])
            defer { plain.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
            return Array(plain)
        } catch {
            throw .corrupt(
                reason: "the encrypted file failed authentication: it was changed or damaged, or written "
                    + "with another app's secret")
        }
    }

    /// The identity in a file's header, read without the key (for listing); `nil` when the
    /// bytes are not a file of this format.
    static func identity(inHeaderOf bytes: [UInt8]) -> (alias: String, applicationID: String, dictionaryName: String)? {
        guard let parsed = try? parse(bytes) else { return nil }
        let parts = parsed.identity.split(separator: 0, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        return (
            String(decoding: parts[0], as: UTF8.self), String(decoding: parts[1], as: UTF8.self),
            String(decoding: parts[2], as: UTF8.self)
        )
    }

    // MARK: Layout

    private static func header(identity: [UInt8], salt: [UInt8], nonce: [UInt8]) -> [UInt8] {
        magic + [version, UInt8(identity.count >> 8), UInt8(identity.count & 0xff)] + identity + salt + nonce
    }

    private struct Parsed {
        let identity: ArraySlice<UInt8>
        let salt: Range<Int>
        let nonce: Range<Int>
        let ciphertext: Range<Int>
    }

    /// Checks the header's bounds; never reads past `bytes`.
    private static func parse(_ bytes: [UInt8]) throws(SecureDictionaryError) -> Parsed {
        let fixed = magic.count + 3
        guard bytes.count >= fixed, bytes.starts(with: magic) else {
            throw .corrupt(reason: "not a SecureDictionary encrypted file")
        }
        let version = bytes[magic.count]
        guard version == self.version else { throw .unsupportedFormatVersion("encrypted file version \(version)") }
        let identityCount = Int(bytes[magic.count + 1]) << 8 | Int(bytes[magic.count + 2])
        let saltStart = fixed + identityCount
        let nonceStart = saltStart + saltSize
        let ciphertextStart = nonceStart + nonceSize
        guard bytes.count >= ciphertextStart + tagSize else {
            throw .corrupt(reason: "the encrypted file is truncated")
        }
        return Parsed(
            identity: bytes[fixed..<saltStart], salt: saltStart..<nonceStart, nonce: nonceStart..<ciphertextStart,
            ciphertext: ciphertextStart..<(bytes.count - tagSize))
    }

    private static func key(_ masterSecret: SecretBytes, salt: some DataProtocol) -> SymmetricKey {
        masterSecret.withUnsafeBytes { secret in
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: secret), salt: salt, info: keyLabel, outputByteCount: 32)
        }
    }
}
