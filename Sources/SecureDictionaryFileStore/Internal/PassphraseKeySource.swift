import SecureDictionary
import Synchronization

/// A master secret stretched from a passphrase with scrypt, whose parameters and salt each
/// file's header carries; kept in memory, and in the kernel keyring for the login session,
/// so that the passphrase is asked once.
///
/// Where a secret comes from, in order: this store's memory; the session's kernel keyring
/// (`securedictionary:passphrase:SALT:COST`, 32 bytes, with the cache's timeout); the
/// passphrase, asked (`PassphraseReader`), stretched and checked against the file's key
/// check: a wrong one is `SecureDictionaryError.wrongPassphrase` and is kept nowhere.
///
/// A folder has one salt: the first file written picks it, and later files reuse the salt
/// of the file they replace, else of any file in the folder, so one passphrase and one
/// scrypt serve them all.
final class PassphraseKeySource: MasterKeySource {
    let name = "passphrase"
    let input: EncryptedFileStore.PassphraseInput
    let cache: EncryptedFileStore.PassphraseCache
    let cost: EncryptedFileStore.PassphraseCost
    let prompt: String
    /// Derived secrets by parameters, with their key checks; the last used is `current`.
    private let derived = Mutex<(secrets: [ScryptParameters: (SecretBytes, [UInt8])], current: ScryptParameters?)>(([:], nil))
    /// One passphrase asked at a time.
    private let asking = FairLock()

    init(
        input: EncryptedFileStore.PassphraseInput, cache: EncryptedFileStore.PassphraseCache,
        cost: EncryptedFileStore.PassphraseCost, prompt: String
    ) {
        self.input = input
        self.cache = cache
        self.cost = cost
        self.prompt = prompt
    }

    func secret(opening block: KeyBlock?, in folder: ItemFileFolder, until deadline: Deadline) throws(SecureDictionaryError)
        -> SecretBytes
    {
        guard let block, block.kind == .passphrase, let parameters = block.scrypt else { throw .wrongKey(source: name) }
        return try secret(for: parameters, check: block.check)
    }

    func keyForWriting(replacing block: KeyBlock?, in folder: ItemFileFolder, until deadline: Deadline)
        throws(SecureDictionaryError) -> (KeyBlock, SecretBytes)
    {
        if let block, block.kind == .passphrase, let parameters = block.scrypt {
            return (block, try secret(for: parameters, check: block.check))
        }
        if let (parameters, secret, check) = derived.withLock({ state in
            state.current.flatMap { current in state.secrets[current].map { (current, $0.0, $0.1) } }
        }) {
            return (KeyBlock(kind: .passphrase, scrypt: parameters, check: check), secret)
        }
        // Another file of the folder: its salt, and the passphrase it was written with.
        if let sibling = try folder.headers().lazy.compactMap({ $0.header.key }).first(where: { $0.kind == .passphrase }),
            let parameters = sibling.scrypt
        {
            return (sibling, try secret(for: parameters, check: sibling.check))
        }
        return try newPassphrase()
    }

    func forget(in folder: ItemFileFolder) {
        var parameters = derived.withLock { state in
            defer { state = ([:], nil) }
            return Set(state.secrets.keys)
        }
        for header in (try? folder.headers()) ?? [] {
            if let scrypt = header.header.key?.scrypt { parameters.insert(scrypt) }
        }
        for parameter in parameters { KernelKeyring.revoke(Self.cacheDescription(parameter)) }
    }

    /// How long a thread waits for another thread's prompt: as long as one prompt may take.
    private var promptWait: Duration {
        if case .terminal(let timeout) = input { return timeout * 2 + .seconds(10) }
        return .seconds(130)
    }

    /// A new passphrase for a folder that has none yet: asked (twice on a terminal), with a
    /// new salt.
    func newPassphrase(input: EncryptedFileStore.PassphraseInput? = nil) throws(SecureDictionaryError)
        -> (KeyBlock, SecretBytes)
    {
        let input = input ?? self.input
        let parameters = try ScryptParameters.random(log2N: cost.log2N, r: cost.blockSize, p: cost.parallelism)
        guard asking.lock(until: Deadline(after: promptWait)) else { throw .timedOut }
        defer { asking.unlock() }
        let passphrase = try PassphraseReader.read(input, prompt: "New " + prompt.prefix(1).lowercased() + prompt.dropFirst())
        if case .terminal = input {
            let again = try PassphraseReader.read(input, prompt: "The same passphrase again: ")
            guard again.holdsSameBytes(as: passphrase) else {
                throw .passphraseUnavailable(reason: "the two passphrases typed differ")
            }
        }
        let secret = try parameters.derive(passphrase)
        let check = EncryptedItemFile.keyCheck(of: secret)
        keep(secret, check: check, for: parameters)
        return (KeyBlock(kind: .passphrase, scrypt: parameters, check: check), secret)
    }

    /// The secret of `parameters`, which must pass `check`.
    private func secret(for parameters: ScryptParameters, check: [UInt8]) throws(SecureDictionaryError) -> SecretBytes {
        if let found = remembered(parameters, check: check) { return found }
        guard asking.lock(until: Deadline(after: promptWait)) else { throw .timedOut }
        defer { asking.unlock() }
        if let found = remembered(parameters, check: check) { return found }  // asked by another thread meanwhile
        let passphrase = try PassphraseReader.read(input, prompt: prompt)
        let secret = try parameters.derive(passphrase)
        guard constantTimeEqual(EncryptedItemFile.keyCheck(of: secret), check) else { throw .wrongPassphrase }
        keep(secret, check: check, for: parameters)
        return secret
    }

    /// From memory, else from the session's kernel keyring (a stale entry that fails the
    /// check is revoked).
    private func remembered(_ parameters: ScryptParameters, check: [UInt8]) -> SecretBytes? {
        if let (secret, kept) = derived.withLock({ $0.secrets[parameters] }) {
            if constantTimeEqual(kept, check) {
                derived.withLock { $0.current = parameters }
                return secret
            }
        }
        guard case .kernelKeyring = cache, let secret = KernelKeyring.read(Self.cacheDescription(parameters), capacity: 64)
        else { return nil }
        guard constantTimeEqual(EncryptedItemFile.keyCheck(of: secret), check) else {
            KernelKeyring.revoke(Self.cacheDescription(parameters))
            return nil
        }
        derived.withLock { state in
            state.secrets[parameters] = (secret, check)
            state.current = parameters
        }
        return secret
    }

    private func keep(_ secret: SecretBytes, check: [UInt8], for parameters: ScryptParameters) {
        derived.withLock { state in
            state.secrets[parameters] = (secret, check)
            state.current = parameters
        }
        if case .kernelKeyring(let timeout) = cache {
            secret.withUnsafeBytes { _ = KernelKeyring.store(Self.cacheDescription(parameters), $0, timeout: timeout) }
        }
    }

    /// The kernel keyring key's description for `parameters`: the salt names the folder's
    /// passphrase (the salt is not secret; the key is).
    static func cacheDescription(_ parameters: ScryptParameters) -> String {
        let salt = parameters.salt.map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
        return "securedictionary:passphrase:\(salt):\(parameters.log2N).\(parameters.r).\(parameters.p)"
    }
}
