import SecureDictionary
import Synchronization

/// Where an encrypted-file store's master secret comes from, and what its files' headers
/// say about it (`KeyBlock`).
protocol MasterKeySource: Sendable {
    /// The source, for `SecureDictionaryError.wrongKey(source:)`: e.g. `systemd credential 'app'`.
    var name: String { get }

    /// The master secret that opens a file whose header has `block` (`nil`: a version 1
    /// file, which only AES-GCM can check).
    ///
    /// - Throws: `SecureDictionaryError.wrongKey(source:)` or
    ///   `SecureDictionaryError.wrongPassphrase` when the key check differs; what getting
    ///   the secret throws.
    func secret(opening block: KeyBlock?, in folder: ItemFileFolder, until deadline: Deadline) throws(SecureDictionaryError)
        -> SecretBytes

    /// The key block and master secret to write a file with, in place of a file with `block`
    /// (`nil`: a new file).
    func keyForWriting(replacing block: KeyBlock?, in folder: ItemFileFolder, until deadline: Deadline)
        throws(SecureDictionaryError) -> (KeyBlock, SecretBytes)

    /// Drops the secrets kept in memory (wiped), and those kept for the session.
    func forget(in folder: ItemFileFolder)
}

/// A master secret that is fetched whole and kept: the Secret portal's, a systemd credential.
final class FixedSecretSource: MasterKeySource {
    let name: String
    private let fetch: @Sendable (Duration) throws(SecureDictionaryError) -> SecretBytes
    /// The secret and its key check, once fetched.
    private let kept = Mutex<(secret: SecretBytes, check: [UInt8])?>(nil)
    private let fetching = FairLock()

    init(name: String, fetch: @escaping @Sendable (Duration) throws(SecureDictionaryError) -> SecretBytes) {
        self.name = name
        self.fetch = fetch
    }

    func secret(opening block: KeyBlock?, in folder: ItemFileFolder, until deadline: Deadline) throws(SecureDictionaryError)
        -> SecretBytes
    {
        let (secret, check) = try current(until: deadline)
        guard let block else { return secret }
        guard block.kind == .secret, constantTimeEqual(block.check, check) else { throw .wrongKey(source: name) }
        return secret
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
        guard fetching.lock(until: deadline) else { throw .timedOut }
        defer { fetching.unlock() }
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
