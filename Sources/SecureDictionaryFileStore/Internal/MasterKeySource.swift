import SecureDictionary
import Synchronization

/// Where an encrypted-file store's master secret comes from, and what its files' headers
/// say about it (`KeyBlock`).
///
/// ## When the key check differs
///
/// A file's key check (HKDF of the master secret, in its header) tells before decrypting
/// whether a key is the file's. When it differs, the key is another (`wrongPassphrase`,
/// `wrongKey`) or the file is damaged (`corrupt`). Without these rules one flipped bit of one
/// file's check read as "wrong passphrase" with the right one, and revoked the folder's kept
/// key. The rules, each sound:
/// - *Restored check*: the file, its check put back as the key's own, authenticates under the
///   key (the tag covers the whole header) → `corrupt` (`EncryptedItemFile.opensWithRestoredCheck`).
/// - *One salt, one passphrase*: a salt is random and never reused for another passphrase, so
///   a key of that salt and cost known to be right (kept, or matching another file's check)
///   makes any other check with it damage → `corrupt`.
/// - Otherwise the key is another → `wrongPassphrase` or `wrongKey`. A kept key is dropped
///   only by `forgetKey()` or its timeout, never because of one file.
/// Ambiguous still: a planted salt reads as `wrongPassphrase`, as a file of another
/// passphrase does (a passphrase change stopped halfway leaves such files, which must not be
/// called corrupt); its cost is bounded before any stretch (`PassphraseKeySource`).
/// Tests: `FileStoreAdversarialTests.aFlippedKeyCheckBitIsCorruptAndTheFolderKeepsItsKey`,
/// `everyFlippedBitOfAKeyCheckIsCorrupt`.
protocol MasterKeySource: Sendable {
    /// The source, for ``FileStoreError/wrongKey(source:)``: e.g. `systemd credential 'app'`.
    var name: String { get }

    /// The master secret that opens `file` (whose block is `nil` in version 1: only AES-GCM
    /// checks it).
    ///
    /// - Throws: `wrongKey` or `wrongPassphrase` for another key, `corrupt` for a damaged key
    ///   check (the rules above); what getting the secret throws.
    func secret(opening file: KeyedFile, in folder: ItemFileFolder, until deadline: Deadline) throws(SecureDictionaryError)
        -> SecretBytes

    /// The key block and master secret to write a file with, in place of a file with `block`
    /// (`nil`: a new file).
    func keyForWriting(replacing block: KeyBlock?, in folder: ItemFileFolder, until deadline: Deadline)
        throws(SecureDictionaryError) -> (KeyBlock, SecretBytes)

    /// Drops the secrets kept in memory (wiped), and those kept for the session.
    func forget(in folder: ItemFileFolder)
}

/// A file whose key is wanted: its key block, and how to tell a damaged check from another key.
struct KeyedFile {
    /// The file's name in the folder, `nil` when unknown.
    var name: String?
    var block: KeyBlock?
    /// `EncryptedItemFile.opensWithRestoredCheck` (`false` when only the header was read).
    var opensWithRestoredCheck: (SecretBytes) -> Bool = { _ in false }

    /// `corrupt`, for a file whose key check alone is damaged, or that was changed.
    static let damagedCheck = SecureDictionaryError.corrupt(
        reason: "the encrypted file was changed or damaged: its key check is not that of the right key")
}

/// A master secret that is fetched whole and kept: the Secret portal's, a systemd credential's.
final class FixedSecretSource: MasterKeySource {
    let name: String
    private let fetch: @Sendable (Duration) throws(SecureDictionaryError) -> SecretBytes
    /// The secret and its key check, once fetched.
    private let kept = Mutex<(secret: SecretBytes, check: [UInt8])?>(nil)
    private let fetching = LockQueue()

    init(name: String, fetch: @escaping @Sendable (Duration) throws(SecureDictionaryError) -> SecretBytes) {
        self.name = name
        self.fetch = fetch
    }

    func secret(opening file: KeyedFile, in folder: ItemFileFolder, until deadline: Deadline) throws(SecureDictionaryError)
        -> SecretBytes
    {
        let (secret, check) = try current(until: deadline)
        guard let block = file.block else { return secret }
        guard block.kind == .secret else { throw .wrongKey(source: name) }
        if constantTimeEqual(block.check, check) { return secret }
        if file.opensWithRestoredCheck(secret) { throw KeyedFile.damagedCheck }
        throw .wrongKey(source: name)
    }

    func keyForWriting(replacing block: KeyBlock?, in folder: ItemFileFolder, until deadline: Deadline)
        throws(SecureDictionaryError) -> (KeyBlock, SecretBytes)
    {
        let (secret, check) = try current(until: deadline)
        return (KeyBlock(kind: .secret, check: check), secret)
    }

    func forget(in folder: ItemFileFolder) {
        kept.withLock { $0 = nil }
    }

    /// The secret, fetched once (one fetch at a time, within the deadline).
    private func current(until deadline: Deadline) throws(SecureDictionaryError) -> (secret: SecretBytes, check: [UInt8]) {
        if let kept = kept.withLock({ $0 }) { return kept }
        guard fetching.enter(until: deadline) else { throw .timedOut }
        defer { fetching.leave() }
        if let kept = kept.withLock({ $0 }) { return kept }
        let secret = try fetch(deadline.remainingForCall())
        let fetched = (secret: secret, check: EncryptedItemFile.keyCheck(of: secret))
        kept.withLock { $0 = fetched }
        return fetched
    }
}

/// Compares without stopping at the first difference.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
}
