import CFileStoreShim
import SecureDictionary

/// The content of one item's file in an encrypted-file store: the dictionary's blob,
/// encrypted and authenticated with a key derived from the store's master secret.
///
/// ```swift
/// let file = try EncryptedItemFile.seal(blob, for: item, key: block, secret: secret, generation: 7)
/// let header = try EncryptedItemFile.header(of: file)       // no key needed
/// let blob = try EncryptedItemFile.open(file, for: item, secret: secret)
/// ```
///
/// Layout of version 2 (integers big-endian); every byte before the ciphertext is
/// authenticated, so no header field can be changed or moved to another item's file:
///
/// | bytes | field |
/// | --- | --- |
/// | 8 | magic `SDCRYPT` and a zero byte |
/// | 1 | format version, 2 |
/// | 2 | length of the identity |
/// | n | identity: collection alias, application ID and dictionary name, UTF-8, NUL-separated |
/// | 1 | key kind: 1 a master secret (Secret portal, systemd credential), 2 a passphrase |
/// | 19 | passphrase only: scrypt log2(N), r, p (one byte each) and its 16-byte salt |
/// | 16 | key check: HKDF-SHA256 of the master secret, label `io.github.securedictionary.key-check.v1` |
/// | 8 | generation: larger in every write (rollback detection, `GenerationRecord`) |
/// | 32 | salt, random per write |
/// | 12 | AES-GCM nonce, random per write |
/// | rest − 16 | ciphertext |
/// | 16 | tag |
///
/// Version 1 (the Secret portal store's first files) has no key kind, key check or
/// generation; it is read, and replaced by version 2 on the next write.
///
/// The file key is HKDF-SHA256 of the master secret with the salt and the label
/// `io.github.securedictionary.file.v1`: a new key for every write, so a random nonce never
/// meets the same key twice. The identity is in clear (item names are not secret; the keyring
/// shows them too) so that listing needs no key. The key check (its use: `MasterKeySource`)
/// gives a guesser nothing the tag does not (for a passphrase, each guess still costs a scrypt).
enum EncryptedItemFile {
    static let magic: [UInt8] = Array("SDCRYPT".utf8) + [0]
    static let version: UInt8 = 2
    static let saltSize = 32
    static let nonceSize = 12
    static let tagSize = 16
    static let checkSize = 16
    static let keyLabel = Array("io.github.securedictionary.file.v1".utf8)
    static let checkLabel = Array("io.github.securedictionary.key-check.v1".utf8)
    /// The largest file read: D-Bus cannot carry a larger secret either, and a dictionary's
    /// size cap is far below.
    static let maximumFileSize = (1 << 26) + 4096
    /// Enough bytes for any header (identities are at most 3 × 255 bytes).
    static let maximumHeaderSize = 4096

    /// What the header of a file says; nothing in it is secret.
    struct Header: Sendable, Equatable {
        var version: UInt8
        var alias: String
        var applicationID: String
        var dictionaryName: String
        /// `nil` in version 1.
        var key: KeyBlock?
        /// 0 in version 1.
        var generation: UInt64
        /// Where the ciphertext starts.
        var headerSize: Int
        fileprivate var identity: [UInt8]

        /// The item the header names.
        func item() throws(SecureDictionaryError) -> KeyringItem {
            try KeyringItem(
                dictionaryName: dictionaryName.isEmpty ? nil : dictionaryName, applicationID: applicationID,
                collection: KeyringCollection(alias: alias))
        }
    }

    /// The identity of `item` as stored in its file's header.
    static func identity(of item: KeyringItem) -> [UInt8] {
        Array(item.collection.alias.utf8) + [0] + Array(item.applicationID.utf8) + [0] + Array(item.dictionaryName.utf8)
    }

    /// The key check of `secret` (see the layout).
    static func keyCheck(of secret: SecretBytes) -> [UInt8] {
        hkdf(secret, salt: [], info: checkLabel, count: checkSize)
    }

    /// HKDF-SHA256 (CFileStoreShim: nothing left on the stack).
    static func hkdf(_ secret: SecretBytes, salt: [UInt8], info: [UInt8], count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let done = secret.withUnsafeBytes { secret in
            sd_hkdf_sha256(
                &out, count, secret.baseAddress?.assumingMemoryBound(to: UInt8.self), secret.count, salt, salt.count, info,
                info.count)
        }
        precondition(done == 1, "HKDF-SHA256 of 16 or 32 bytes cannot fail")
        return out
    }

    /// Encrypts `blob` for `item` under `secret`, whose key block is `key`.
    static func seal(_ blob: SecretBytes, for item: KeyringItem, key: KeyBlock, secret: SecretBytes, generation: UInt64)
        throws(SecureDictionaryError) -> [UInt8]
    {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<saltSize).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let nonce = (0..<nonceSize).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let identity = identity(of: item)
        var header = magic + [version, UInt8(identity.count >> 8), UInt8(identity.count & 0xff)] + identity
        header += [key.kind.rawValue] + (key.scrypt.map { [$0.log2N, $0.r, $0.p] + $0.salt } ?? []) + key.check
        header += (0..<8).reversed().map { UInt8(truncatingIfNeeded: generation >> (UInt64($0) * 8)) }
        header += salt + nonce
        var file = header + [UInt8](repeating: 0, count: blob.count + tagSize)
        let done = secret.withUnsafeBytes { master in
            blob.withUnsafeBytes { blob in
                file.withUnsafeMutableBufferPointer { file in
                    sd_file_crypt(
                        0, master.baseAddress?.assumingMemoryBound(to: UInt8.self), master.count, salt, salt.count, keyLabel,
                        keyLabel.count, nonce, header, header.count, blob.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        blob.count, file.baseAddress! + header.count)
                }
            }
        }
        guard done == 1 else {
            throw .keyring(domain: "SecureDictionary.EncryptedItemFile", code: 1, message: "encryption failed")
        }
        return file
    }

    /// Decrypts the file `bytes` of `item`, whose key the caller checked against
    /// `header.key`, straight into locked pages (no other copy of the plaintext).
    static func open(_ bytes: [UInt8], header: Header, for item: KeyringItem, secret: SecretBytes)
        throws(SecureDictionaryError) -> SecretBytes
    {
        guard header.identity.elementsEqual(identity(of: item)) else {
            throw .corrupt(reason: "the encrypted file belongs to another item")
        }
        guard let plain = decrypt(bytes, header: header, secret: secret, authenticating: Array(bytes[..<header.headerSize]))
        else {
            let written = header.key == nil ? ", or written with another app's secret" : ""
            throw .corrupt(reason: "the encrypted file failed authentication: it was changed or damaged\(written)")
        }
        return plain
    }

    /// Whether `bytes` authenticates under `secret` once its key check is put back as
    /// `secret`'s own: then only the stored check is damaged ("When the key check differs" in
    /// MasterKeySource.swift). Nothing decrypted is kept.
    static func opensWithRestoredCheck(_ bytes: [UInt8], header: Header, secret: SecretBytes) -> Bool {
        guard header.key != nil else { return false }
        let checkStart = header.headerSize - saltSize - nonceSize - 8 - checkSize
        var restored = Array(bytes[..<header.headerSize])
        restored.replaceSubrange(checkStart..<(checkStart + checkSize), with: keyCheck(of: secret))
        return decrypt(bytes, header: header, secret: secret, authenticating: restored) != nil
    }

    /// AES-GCM opening of `bytes`'s ciphertext with `header`'s salt and nonce and the
    /// associated data `aad`, into locked pages: the plaintext, or `nil` when it does not
    /// authenticate (what was written is wiped with the pages).
    private static func decrypt(_ bytes: [UInt8], header: Header, secret: SecretBytes, authenticating aad: [UInt8])
        -> SecretBytes?
    {
        let saltStart = header.headerSize - saltSize - nonceSize
        let nonceStart = header.headerSize - nonceSize
        var done: Int32 = 0
        let plain = SecretBytes(count: bytes.count - header.headerSize - tagSize) { plain in
            done = secret.withUnsafeBytes { master in
                bytes.withUnsafeBufferPointer { file in
                    sd_file_crypt(
                        1, master.baseAddress?.assumingMemoryBound(to: UInt8.self), master.count, file.baseAddress! + saltStart,
                        saltSize, keyLabel, keyLabel.count, file.baseAddress! + nonceStart, aad, aad.count,
                        file.baseAddress! + header.headerSize, file.count - header.headerSize,
                        plain.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        return done == 1 ? plain : nil
    }

    /// The header of the file `bytes` (all of it, or its first bytes, for listing), checked
    /// for bounds; never reads past `bytes`.
    ///
    /// - Throws: `SecureDictionaryError.corrupt(reason:)` when the bytes are not a file of
    ///   this format or are truncated; `SecureDictionaryError.unsupportedFormatVersion(_:)`
    ///   for another version.
    static func header(of bytes: [UInt8]) throws(SecureDictionaryError) -> Header {
        var reader = Reader(bytes: bytes)
        guard let start = reader.take(magic.count), start.elementsEqual(magic), let version = reader.byte() else {
            throw .corrupt(reason: "not a SecureDictionary encrypted file")
        }
        guard version == 1 || version == 2 else {
            throw .unsupportedFormatVersion("encrypted file version \(version)")
        }
        let truncated = SecureDictionaryError.corrupt(reason: "the encrypted file is truncated")
        guard let high = reader.byte(), let low = reader.byte(), let identity = reader.take(Int(high) << 8 | Int(low)) else {
            throw truncated
        }
        let parts = identity.split(separator: 0, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .corrupt(reason: "the encrypted file's header names no item") }
        var key: KeyBlock?
        var generation: UInt64 = 0
        if version == 2 {
            guard let kindByte = reader.byte() else { throw truncated }
            guard let kind = KeyBlock.Kind(rawValue: kindByte) else {
                throw .unsupportedFormatVersion("encrypted file key kind \(kindByte)")
            }
            var scrypt: ScryptParameters?
            if kind == .passphrase {
                guard let cost = reader.take(3), let salt = reader.take(ScryptParameters.saltSize) else { throw truncated }
                let (log2N, r, p) = (cost[cost.startIndex], cost[cost.startIndex + 1], cost[cost.startIndex + 2])
                scrypt = try ScryptParameters(log2N: log2N, r: r, p: p, salt: Array(salt))
            }
            guard let check = reader.take(checkSize), let count = reader.take(8) else { throw truncated }
            key = KeyBlock(kind: kind, scrypt: scrypt, check: Array(check))
            generation = count.reduce(0) { $0 << 8 | UInt64($1) }
        }
        guard reader.take(saltSize + nonceSize) != nil else { throw truncated }
        let headerSize = reader.offset
        return Header(
            version: version, alias: String(decoding: parts[0], as: UTF8.self),
            applicationID: String(decoding: parts[1], as: UTF8.self), dictionaryName: String(decoding: parts[2], as: UTF8.self),
            key: key, generation: generation, headerSize: headerSize, identity: Array(identity))
    }

    /// `header(of:)` of a whole file, which must also hold a tag.
    static func wholeFileHeader(of bytes: [UInt8]) throws(SecureDictionaryError) -> Header {
        let header = try header(of: bytes)
        guard bytes.count >= header.headerSize + tagSize else { throw .corrupt(reason: "the encrypted file is truncated") }
        return header
    }

    /// Reads fields front to back, never past the end.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return bytes[offset..<(offset + count)]
        }

        mutating func byte() -> UInt8? { take(1)?.first }
    }
}

/// Which key a file was written with: what the header says about it.
struct KeyBlock: Sendable, Hashable {
    enum Kind: UInt8, Sendable {
        /// A master secret: the Secret portal's, or a systemd credential.
        case secret = 1
        /// A passphrase stretched with scrypt.
        case passphrase = 2
    }

    var kind: Kind
    /// For `Kind.passphrase` only.
    var scrypt: ScryptParameters?
    var check: [UInt8]
}
