import Logging
import Synchronization

/// One keyring item as this process knows it, shared by every ``SecureDictionary`` instance
/// of that item (see ``ItemRegistry``). The write path is ``mutate(_:edit:_:)``.
///
/// Invariants (what must hold for nothing to be lost), and why:
/// - **The keyring is the truth.** Before every write, under the locks, the writer reads the
///   stored item and compares its ``StoredDigest`` with that of the blob this process last
///   loaded or wrote. Different means someone else wrote (another process, another tool), so
///   the stored blob is decoded and the change is applied onto it. No local file or stamp is
///   trusted to prove that nobody wrote. Tests: `CheckBeforeWriteTests`, `OutsideWriters`.
/// - **Nothing is written over a blob that was not decoded**: an item this process cannot
///   read is never replaced by accident (``SecureDictionary/delete(name:applicationID:options:)``
///   is the explicit way). Test: `aBlobThatBecameCorruptIsNotOverwritten`.
/// - **Memory follows the store.** Encode and size-check first, write second, update the
///   cache last, so a failed write leaves the cache equal to the store. A write whose outcome
///   is unknown keeps the last known entries for non-throwing reads but marks them
///   ``StoredDigest/unknown``, so the next throwing read or write reloads instead of trusting
///   either version. Test: `FaultPositionTests` (a fault at every store call).
/// - **One deadline per call.** Waiting for `serial`, for the writer lock and each keyring
///   call get what is left of it. Test: `threadsQueuedBehindAStuckWriteFailAtTheirOwnDeadline`.
/// - **Locks serve fairness, not correctness.** One load or mutation at a time in this
///   process (`serial`), one writer at a time among the processes that take the item's
///   ``ItemWriterLock``. A writer that does not take it can only slip in between the check
///   and the write: one keyring round trip (measured by `scripts/reliability`).
/// - **Loaded before use, never unloaded.** An instance exists only once its init loaded
///   the state (a failed load throws, and no instance is made), and nothing unloads it
///   afterwards (a failed reload leaves the cache as it was; a delete leaves it empty and
///   loaded): so the non-throwing reads of an instance always find entries, on any thread.
///   The cache is wiped when the last instance goes (`deinit`). Test: `ReadRuleTests`.
///
/// Optimizations (each may be deleted; its gain, the benchmark row that shows it, and the
/// test that proves it safe):
/// - **An unchanged blob is not decoded**: the check's digest equals the cache's, so the
///   cache is used. Gain: the decode, about 3 ms at 1,000 entries (`decode 1,000 entries`
///   in the benchmark's breakdown), on every mutation that follows this process's own.
///   Safe: the digest is keyed per process (``StoredDigest``); `anOutsideWriteBetweenLoadAndWriteIsKept`.
/// - **A one-key change splices the stored blob** instead of encoding every entry
///   (``KeyEdit``). Gain and tests: see ``KeyEdit``.
/// - **A write that changes nothing is not sent.** Gain: the whole write. Test:
///   `aWriteThatChangesNothingIsNotSent`.
final class ItemState: Sendable {
    enum Cache {
        case unloaded
        case loaded(entries: [String: PropertyListValue], digest: StoredDigest)
    }

    let item: KeyringItem
    let store: any KeyringStore
    private let writerLock: (any ItemWriterLock)?
    private let serial = FairLock()
    private let cache = Mutex(Cache.unloaded)
    /// Observation state (see ItemState+Observation.swift).
    let observers = Mutex(Observers())

    init(item: KeyringItem, store: any KeyringStore, logger: Logger) {
        self.item = item
        self.store = store
        writerLock = (store as? any CoordinatedStore)?.writerLock(for: item, logger: logger)
    }

    deinit {
        cache.withLock { Self.drop(&$0) }
        observers.withLock { $0.watcher?.stop() }
    }

    // MARK: Reads

    /// The cached entries (also after a write whose outcome is unknown), or `nil` before the
    /// first load. Never loads, never waits for a keyring call.
    var cachedEntries: [String: PropertyListValue]? {
        cache.withLock { cache in
            if case .loaded(let entries, _) = cache { return entries }
            return nil
        }
    }

    /// The entries of a state an instance uses: loaded by the init that made the instance,
    /// never unloaded afterwards (the invariant "loaded before use" above).
    var loadedEntries: [String: PropertyListValue] {
        guard let entries = cachedEntries else {
            preconditionFailure("\(item.name): an ItemState was read before the init that loads it")
        }
        return entries
    }

    /// The cached entries when they are known to be what this process last loaded or wrote.
    private var currentEntries: [String: PropertyListValue]? {
        cache.withLock { cache in
            if case .loaded(let entries, let digest) = cache, digest != .unknown { return entries }
            return nil
        }
    }

    /// The entries, loading them first when unloaded or after a write whose outcome is unknown.
    func entries(_ context: OperationContext) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        if let entries = currentEntries { return entries }
        return try unlockingIfAllowed(context) { () throws(SecureDictionaryError) in
            try exclusively(context) { deadline throws(SecureDictionaryError) in
                if let entries = currentEntries { return entries }  // another thread loaded meanwhile
                return try check(context.limits, deadline).entries
            }
        }
    }

    /// The stored entries, read from the keyring (decoded only when they changed).
    @discardableResult
    func reload(_ context: OperationContext) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        try unlockingIfAllowed(context) { () throws(SecureDictionaryError) in
            try exclusively(context) { deadline throws(SecureDictionaryError) in
                try check(context.limits, deadline).entries
            }
        }
    }

    // MARK: Writes

    /// Applies `body` to the stored entries and writes the result, all or nothing. `edit`:
    /// `body` makes exactly this one-key change, so the new blob may be spliced.
    func mutate<R, E: Error>(
        _ context: OperationContext, edit: KeyEdit? = nil, _ body: (inout [String: PropertyListValue]) throws(E) -> R
    ) throws(MutationFailure<E>) -> R {
        var checked = false
        do {
            return try mutateOnce(context, edit: edit, checked: &checked, body)
        } catch .store(.locked) where !checked && context.unlock != .never {
            // Locked at the check, before `body` ran: unlock, then start again (with a new
            // deadline, since the user may have taken a minute).
            try MutationFailure<E>.store { () throws(SecureDictionaryError) in try unlockInteractively(context) }
            return try mutateOnce(context, edit: edit, checked: &checked, body)
        }
    }

    /// The write path: locks, check, the change applied to what is stored, splice or encode,
    /// write, publish. `checked` is set once the stored item was read.
    private func mutateOnce<R, E: Error>(
        _ context: OperationContext, edit: KeyEdit?, checked: inout Bool,
        _ body: (inout [String: PropertyListValue]) throws(E) -> R
    ) throws(MutationFailure<E>) -> R {
        let started = ContinuousClock.now
        let deadline = Deadline(after: context.timeout)
        guard serial.lock(until: deadline) else { throw .store(.timedOut) }
        defer { serial.unlock() }

        // The stored item, read holding the writer lock; decoded (and cached) if someone else wrote.
        let (locked, check) = try MutationFailure<E>.store { () throws(SecureDictionaryError) in
            try lockedCheck(context.limits, deadline)
        }
        defer { if locked { writerLock?.release() } }
        checked = true
        let waited = check.started - started  // for other threads and processes

        var entries = check.entries
        let result: R
        do throws(E) { result = try body(&entries) } catch { throw .body(error) }

        var bytes = try MutationFailure<E>.store { [entries] () throws(SecureDictionaryError) in
            if let edit, let stored = check.stored, let spliced = try edit.splice(stored, limits: context.limits) {
                return spliced
            }
            return try BinaryPropertyList.blob(of: entries, limits: context.limits)
        }
        defer { Wipe.bytes(&bytes) }
        assert(edit == nil || KeyEdit.matchesFullEncode(bytes, entries, context.limits), "a splice differs from the full encode")
        let written = StoredDigest(of: bytes)
        guard written != check.digest else { return result }  // the keyring holds exactly this already

        do throws(SecureDictionaryError) {
            try store.store(bytes, for: item, timeout: try deadline.remainingForCall())
        } catch {
            if error.leavesWriteOutcomeUnknown { markOutcomeUnknown() }
            context.logger.debug("write failed", metadata: ["item": "\(item.name)", "error": "\(error)"])
            throw .store(error)
        }
        // From the check's answer to the write's: the most a writer that does not take the
        // lock can slip in between (the residual window, measured by the reliability suite).
        let window = ContinuousClock.now - check.finished
        setLoaded(entries, digest: written)
        context.logger.trace(
            "stored",
            metadata: [
                "item": "\(item.name)", "entries": "\(entries.count)", "bytes": "\(bytes.count)",
                "lock-wait-us": "\(waited.microseconds)", "check-to-write-us": "\(window.microseconds)",
            ])
        return result
    }

    /// Deletes the item from the store (under both locks), leaving an empty, loaded cache.
    func deleteItem(_ context: OperationContext) throws(SecureDictionaryError) -> Bool {
        try unlockingIfAllowed(context) { () throws(SecureDictionaryError) in
            try exclusively(context) { deadline throws(SecureDictionaryError) -> Bool in
                let locked = try writerLock?.acquire(until: deadline) ?? false
                defer { if locked { writerLock?.release() } }
                let existed: Bool
                do throws(SecureDictionaryError) {
                    existed = try store.delete(item, timeout: try deadline.remainingForCall())
                } catch {
                    if error.leavesWriteOutcomeUnknown { markOutcomeUnknown() }
                    throw error
                }
                setLoaded([:], digest: .absent, wipingPrevious: true)  // a deleted dictionary's secrets
                return existed
            }
        }
    }

    // MARK: The check

    /// What a check read: the entries (decoded only when someone else wrote), the digest of
    /// the stored blob and the blob itself, for a ``KeyEdit`` to splice.
    private struct Check {
        var entries: [String: PropertyListValue]
        var digest: StoredDigest
        /// `nil`: no such item.
        var stored: StoredBlob?
        var started: ContinuousClock.Instant
        var finished: ContinuousClock.Instant
    }

    /// Takes the writer lock, when the store has one, and checks the stored item under it.
    private func lockedCheck(_ limits: PropertyListLimits, _ deadline: Deadline) throws(SecureDictionaryError)
        -> (locked: Bool, check: Check)
    {
        let check = { () throws(SecureDictionaryError) -> Check in try self.check(limits, deadline) }
        guard let writerLock else { return (false, try check()) }
        let (held, checked) = try writerLock.acquire(until: deadline, thenCheck: check)
        return (held, checked)
    }

    /// Reads the stored item. Its entries are the cached ones when its digest is the cache's,
    /// else the decoded blob, which then becomes the cache. Call it holding `serial`.
    private func check(_ limits: PropertyListLimits, _ deadline: Deadline) throws(SecureDictionaryError) -> Check {
        let started = ContinuousClock.now
        guard var bytes = try store.load(item, timeout: try deadline.remainingForCall()) else {
            setLoaded([:], digest: .absent)
            return Check(entries: [:], digest: .absent, stored: nil, started: started, finished: .now)
        }
        let finished = ContinuousClock.now
        let digest = StoredDigest(of: bytes)
        let stored = StoredBlob(taking: &bytes)
        let current: [String: PropertyListValue]? = cache.withLock { cache in
            if case .loaded(let entries, let cached) = cache, cached == digest { return entries }
            return nil
        }
        if let current { return Check(entries: current, digest: digest, stored: stored, started: started, finished: finished) }
        let entries = try BinaryPropertyList.entries(of: stored.bytes, limits: limits)
        setLoaded(entries, digest: digest)
        return Check(entries: entries, digest: digest, stored: stored, started: started, finished: finished)
    }

    // MARK: Helpers

    /// Runs `body` holding `serial`, with the call's deadline.
    private func exclusively<T>(
        _ context: OperationContext, _ body: (Deadline) throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        let deadline = Deadline(after: context.timeout)
        guard serial.lock(until: deadline) else { throw .timedOut }
        defer { serial.unlock() }
        return try body(deadline)
    }

    /// Runs `operation`; when it finds the keyring locked and `context` allows the unlock
    /// dialog, has the store show it (waiting for the user up to the policy's timeout) and
    /// runs `operation` once more.
    private func unlockingIfAllowed<T>(
        _ context: OperationContext, _ operation: () throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        do {
            return try operation()
        } catch .locked {
            try unlockInteractively(context)
            return try operation()
        }
    }

    /// Has the store show the keyring's unlock dialog and waits for the user, as `context`
    /// allows; else, or when the store cannot, throws ``SecureDictionaryError/locked``.
    private func unlockInteractively(_ context: OperationContext) throws(SecureDictionaryError) {
        guard case .prompt(let timeout) = context.unlock, let store = store as? any InteractivelyUnlockingStore else {
            throw .locked
        }
        context.logger.info("the keyring is locked: showing its unlock dialog", metadata: ["item": "\(item.name)"])
        try store.unlockInteractively(item.collection, timeout: timeout)
    }

    /// The one place the cache becomes loaded: also tells observers what changed.
    /// `wipingPrevious`: wipe the entries replaced (a walk over all of them), not only drop them.
    private func setLoaded(_ entries: [String: PropertyListValue], digest: StoredDigest, wipingPrevious: Bool = false) {
        cache.withLock { cache in
            if wipingPrevious { Self.drop(&cache) }
            cache = .loaded(entries: entries, digest: digest)
        }
        let (previous, listeners) = observers.withLock { observers in
            guard !observers.continuations.isEmpty else {
                return ([String: PropertyListValue]?.none, [AsyncStream<SecureDictionary.Change>.Continuation]())
            }
            defer { observers.published = entries }
            return (observers.published, Array(observers.continuations.values))
        }
        guard let previous, !listeners.isEmpty else { return }
        for change in SecureDictionary.Change.differences(from: previous, to: entries) {
            for listener in listeners { listener.yield(change) }
        }
    }

    /// After a write that may or may not have landed: keep what non-throwing reads see, but
    /// trust it no more (the next throwing read or write reloads).
    private func markOutcomeUnknown() {
        cache.withLock { cache in
            if case .loaded(let entries, _) = cache { cache = .loaded(entries: entries, digest: .unknown) }
        }
    }

    private static func drop(_ cache: inout Cache) {
        if case .loaded(var entries, _) = cache {
            cache = .unloaded
            Wipe.entries(&entries)
        }
        cache = .unloaded
    }
}

extension Duration {
    /// Whole microseconds, for trace metadata.
    fileprivate var microseconds: Int64 {
        components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
    }
}
