import SecureDictionary
import Synchronization

/// A master secret stretched from a passphrase with scrypt (parameters and salt in each
/// file's header), from this store's memory, else the session's kernel keyring
/// (`cacheDescription(_:)`), else asked (`PassphraseReader`), stretched and checked: a wrong
/// one is kept nowhere, and a check that differs is told from damage as `MasterKeySource` says.
///
/// Invariant, *a planted cost is not stretched*: a header names scrypt's cost and can be
/// planted, so only a cost up to `readableWork` is stretched; costlier is `corrupt` at once.
/// Accepting up to 4 GiB of work, a planted header (2^20 × 8, p = 4) took 11.5 to 14 s and
/// 1 GiB for a read with a 3 s deadline. Test:
/// `FileStoreAdversarialTests.aPlantedCostAboveWhatTheLibraryWritesIsCorruptWithoutAStretch`.
///
/// Invariant, *the stretch keeps the deadline*: it runs on a thread of its own
/// (`ScryptParameters.derive(_:until:late:)`) and the call ends at its deadline with
/// `timedOut`, typing time not counted; a late stretch that passes the check is kept. Test:
/// `FileStoreAdversarialTests.aStretchLongerThanTheDeadlineEndsAtTheDeadline`.
///
/// A folder has one salt: the first file written picks it, later files reuse the replaced
/// file's, else any file's: one passphrase and one stretch serve all.
final class PassphraseKeySource: MasterKeySource {
    let name = "passphrase"
    let input: EncryptedFileStore.PassphraseInput
    let cache: EncryptedFileStore.PassphraseCache
    let cost: EncryptedFileStore.PassphraseCost
    let prompt: String
    /// Derived secrets by parameters, with their key checks; the last used is `current`.
    private let derived = Mutex<(secrets: [ScryptParameters: (SecretBytes, [UInt8])], current: ScryptParameters?)>(([:], nil))
    /// One passphrase asked at a time.
    private let asking = LockQueue()

    init(
        input: EncryptedFileStore.PassphraseInput, cache: EncryptedFileStore.PassphraseCache,
        cost: EncryptedFileStore.PassphraseCost, prompt: String
    ) {
        self.input = input
        self.cache = cache
        self.cost = cost
        self.prompt = prompt
    }

    func keyForWriting(replacing block: KeyBlock?, in folder: ItemFileFolder, until deadline: Deadline)
        throws(SecureDictionaryError) -> (KeyBlock, SecretBytes)
    {
        if let block, block.kind == .passphrase, block.scrypt != nil {
            return (block, try secret(opening: KeyedFile(name: nil, block: block), in: folder, until: deadline))
        }
        if let (parameters, secret, check) = derived.withLock({ state in
            state.current.flatMap { current in state.secrets[current].map { (current, $0.0, $0.1) } }
        }) {
            return (KeyBlock(kind: .passphrase, scrypt: parameters, check: check), secret)
        }
        // Another file of the folder: its salt, and the passphrase it was written with (a
        // damaged one is passed over: it must not keep a new file from being written).
        var damaged: SecureDictionaryError?
        for sibling in try folder.headers() {
            guard let block = sibling.header.key, block.kind == .passphrase, block.scrypt != nil else { continue }
            do throws(SecureDictionaryError) {
                return (block, try secret(opening: KeyedFile(name: sibling.name, block: block), in: folder, until: deadline))
            } catch {
                guard case .corrupt = error else { throw error }
                damaged = error
            }
        }
        if let damaged { throw damaged }  // every file of the folder damaged: no new passphrase beside them
        return try newPassphrase()
    }

    func forget(in folder: ItemFileFolder) {
        var parameters = derived.withLock { state in
            defer { state = ([:], nil) }
            return Set(state.secrets.keys)
        }
        parameters.formUnion(((try? folder.headers()) ?? []).compactMap { $0.header.key?.scrypt })
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
        guard asking.enter(until: Deadline(after: promptWait)) else { throw .timedOut }
        defer { asking.leave() }
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

    /// The secret of `file`'s scrypt parameters, which must pass its check.
    func secret(opening file: KeyedFile, in folder: ItemFileFolder, until deadline: Deadline) throws(SecureDictionaryError)
        -> SecretBytes
    {
        guard let block = file.block, block.kind == .passphrase, let parameters = block.scrypt else {
            throw .wrongKey(source: name)
        }
        if let kept = try remembered(parameters, for: file) { return kept }
        guard parameters.work <= readableWork else {
            throw .corrupt(
                reason: "the encrypted file asks for a passphrase stretch of \(parameters.work >> 20) MiB, more than this "
                    + "store's \(readableWork >> 20) MiB: it was changed, or written with a costlier PassphraseCost")
        }
        let asked = ContinuousClock.now
        guard asking.enter(until: Deadline(after: promptWait)) else { throw .timedOut }
        defer { asking.leave() }
        if let kept = try remembered(parameters, for: file) { return kept }  // asked by another thread meanwhile
        let passphrase = try PassphraseReader.read(input, prompt: prompt)
        // The person's time is not the call's: the stretch gets what was left when asking began.
        let stretchDeadline = Deadline(after: deadline.remaining + (ContinuousClock.now - asked))
        let check = block.check
        let secret = try parameters.derive(passphrase, until: stretchDeadline) { [self] late in
            if constantTimeEqual(EncryptedItemFile.keyCheck(of: late), check) { keep(late, check: check, for: parameters) }
        }
        let own = EncryptedItemFile.keyCheck(of: secret)
        if constantTimeEqual(own, check) {
            keep(secret, check: check, for: parameters)
            return secret
        }
        // The rules of "When the key check differs": the right key for a damaged file is kept.
        if file.opensWithRestoredCheck(secret) || sharesSalt(with: file, check: own, in: folder) {
            keep(secret, check: own, for: parameters)
            throw KeyedFile.damagedCheck
        }
        throw .wrongPassphrase
    }

    /// The most work (`ScryptParameters.work`) a file may ask a stretch for: twice this
    /// store's cost or the standard one, the larger (256 MiB by default).
    var readableWork: Int {
        let work = { (cost: EncryptedFileStore.PassphraseCost) in
            128 * cost.blockSize * (1 << min(cost.log2N, 40)) * cost.parallelism
        }
        return 2 * max(work(cost), work(.standard))
    }

    /// Whether another file of the folder, with `file`'s salt and cost, has the check `check`.
    private func sharesSalt(with file: KeyedFile, check: [UInt8], in folder: ItemFileFolder) -> Bool {
        ((try? folder.headers()) ?? []).contains { other in
            guard other.name != file.name, let key = other.header.key else { return false }
            return key.scrypt == file.block?.scrypt && constantTimeEqual(key.check, check)
        }
    }

    /// The secret of `parameters` from memory, else the kernel keyring. One that fails
    /// `file`'s check is the right key of that salt (it passed one to be kept), so the file is
    /// damaged: `corrupt`, and the key stays kept.
    private func remembered(_ parameters: ScryptParameters, for file: KeyedFile) throws(SecureDictionaryError)
        -> SecretBytes?
    {
        let secret: SecretBytes
        if let (kept, _) = derived.withLock({ $0.secrets[parameters] }) {
            secret = kept
        } else if case .kernelKeyring = cache, let kept = KernelKeyring.read(Self.cacheDescription(parameters), capacity: 64) {
            secret = kept
        } else {
            return nil
        }
        let check = EncryptedItemFile.keyCheck(of: secret)
        guard let wanted = file.block?.check, constantTimeEqual(check, wanted) else { throw KeyedFile.damagedCheck }
        keep(secret, check: check, for: parameters, inKernelKeyring: false)
        return secret
    }

    /// Keeps `secret` in memory as the current one, and (unless it came from there) in the
    /// session's kernel keyring when the cache says so.
    private func keep(_ secret: SecretBytes, check: [UInt8], for parameters: ScryptParameters, inKernelKeyring: Bool = true) {
        derived.withLock { state in
            state.secrets[parameters] = (secret, check)
            state.current = parameters
        }
        if inKernelKeyring, case .kernelKeyring(let timeout) = cache {
            secret.withUnsafeBytes { _ = KernelKeyring.failureToStore(Self.cacheDescription(parameters), $0, timeout: timeout) }
        }
    }

    /// The kernel keyring key for `parameters` (32 bytes): the salt, not secret, names the
    /// folder's passphrase.
    static func cacheDescription(_ parameters: ScryptParameters) -> String {
        "securedictionary:passphrase:\(hex(parameters.salt)):\(parameters.log2N).\(parameters.r).\(parameters.p)"
    }
}
