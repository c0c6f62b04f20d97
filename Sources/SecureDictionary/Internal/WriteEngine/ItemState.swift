import Logging
import ProcessSpawning
import Synchronization

/// One keyring item as this process knows it, shared by every ``SecureDictionary`` instance
/// of that item (``ItemRegistry``). The write path is ``mutate(_:_:)``.
///
/// Invariants (what must hold for nothing to be lost), and why:
/// - **The keyring is the truth.** Before every write, under the locks, the writer reads the
///   stored item and compares its ``StoredDigest`` with that of the blob it last loaded or
///   wrote: different means someone else wrote, so the stored blob is decoded and the change
///   applied onto it. No local file or stamp is trusted to prove that nobody wrote. Tests:
///   `CheckBeforeWriteTests`, `OutsideWriters`.
/// - **Nothing is written over a blob that was not decoded** (replacing one is
///   ``SecureDictionary/delete(name:applicationID:options:)``'s job). Test:
///   `aBlobThatBecameCorruptIsNotOverwritten`.
/// - **Memory follows the store.** Encode and size-check, write, then update the cache: a
///   failed write leaves cache == store. A write whose outcome is unknown keeps the entries
///   for non-throwing reads but marks them ``StoredDigest/unknown``, so the next throwing read
///   or write reloads. Test: `FaultPositionTests` (a fault at every store call).
/// - **One deadline per call**, shared by the wait for the ``LockQueue``, the writer lock and
///   each keyring call (a token refresh waits for the locks until a bound of its own,
///   ``HeldWrite``). Test: `threadsQueuedBehindAStuckWriteFailAtTheirOwnDeadline`.
/// - **The writer lock makes the check safe among this library's writers.** Two writers whose
///   checks both come before either write build on one version, and the later write drops
///   the other's change (two writers under two locks, named from the collection's alias, lost
///   187 of 400 writes). Holding the item's ``ItemWriterLock`` and ``LockQueue`` from the
///   check to the write's answer makes each writer check after the previous write landed; a
///   ``HeldWrite`` (a token refresh) holds both across the caller's await and checks again
///   before its write. A writer that does not take the lock (another tool, a process whose
///   bus refuses the name) can slip in only within one keyring round trip (measured by
///   `scripts/reliability`). Tests:
///   `concurrentProcessesLoseNothing`, `anOutsideWriteDuringTheRefreshIsKept`,
///   `anotherToolHoldingTheDocumentedNameHoldsOffWritersThroughEveryAlias`, and
///   Reliability's lost-updates rows.
/// - **Loaded before use, never unloaded.** An instance exists only once its init loaded the
///   state, and nothing unloads it (a failed reload keeps the cache; a delete leaves it empty
///   and loaded), so the non-throwing reads always find entries, on any thread. Test:
///   `ReadRuleTests`.
/// - **Release-to-forget.** The cache is a ``Generation``: the stored blob in a region of the
///   library's own (out of core dumps, locked in memory), never a `String` or `Dictionary`,
///   whose storage is freed unwiped. A write copies the entries from one region into the next
///   and encodes only the caller's new values (``Generation/writing(_:onto:limits:logger:)``);
///   a region is wiped when the last reference to its generation goes. Tests:
///   `GenerationTests`, `MemoryScanTests` (a core dump holds none of them).
///
/// Optimizations (each may be deleted; its gain, benchmark row and safety test):
/// - **An unchanged blob is not validated again**: the check's digest equals the cache's, so
///   the cached generation is used. Gain: `mutation-1000` at 1.04–1.13× raw libsecret with it
///   and 1.08–1.17× without (past its 1.15× target in 2 runs), lower with it in 5 of 6
///   alternating pairs of `scripts/benchmark --only mutation-10,mutation-1000` (2026-11-26;
///   about 0.2 ms of 3.7). Safe: the digest is keyed per process;
///   `anOutsideWriteBetweenLoadAndWriteIsKept`.
/// - **A write that changes nothing is not sent.** Gain: the whole write. Test:
///   `aWriteThatChangesNothingIsNotSent`.
final class ItemState: Sendable {
    let item: KeyringItem
    let store: any KeyringStore
    let writerLock: (any ItemWriterLock)?
    /// The store's lock from a check to its write, beside the item's (``CoordinatedStore/writeLock(for:logger:)``).
    let writeLock: (any ItemWriterLock)?
    /// The queue of an item whose store has no writer lock (see ``queue(until:)``).
    let ownQueue = LockQueue()
    /// The cached generation and the digest of the blob it holds; `nil` before the first load.
    private let cache = Mutex<(generation: Generation, digest: StoredDigest)?>(nil)
    /// Observation state (see ItemState+Observation.swift).
    let observers = Mutex(Observers())

    init(item: KeyringItem, store: any KeyringStore, logger: Logger) {
        self.item = item
        self.store = store
        writerLock = (store as? any CoordinatedStore)?.writerLock(for: item, logger: logger)
        writeLock = (store as? any CoordinatedStore)?.writeLock(for: item, logger: logger)
    }

    deinit { observers.withLock { $0.watcher?.stop() } }

    // MARK: Reads

    /// The cached generation (also after a write whose outcome is unknown), or `nil` before
    /// the first load. Never loads, never waits for a keyring call.
    var cachedGeneration: Generation? { cached { _ in true } }

    /// The generation of a state an instance uses (the invariant "loaded before use").
    var loadedGeneration: Generation {
        guard let generation = cachedGeneration else {
            preconditionFailure("\(item.name): an ItemState was read before the init that loads it")
        }
        return generation
    }

    /// The cached generation when its digest passes `matches`.
    private func cached(_ matches: (StoredDigest) -> Bool) -> Generation? {
        cache.withLock { cache in cache.flatMap { matches($0.digest) ? $0.generation : nil } }
    }

    /// The cached generation when it is known to be what this process last loaded or wrote.
    private var currentGeneration: Generation? { cached { $0 != .unknown } }

    /// The generation, loading it first when unloaded or after a write whose outcome is unknown.
    func generation(_ context: OperationContext) throws(SecureDictionaryError) -> Generation {
        if let generation = currentGeneration { return generation }
        return try reload(context, unlessCurrent: true)
    }

    /// The stored generation, read from the keyring (validated only when it changed); with
    /// `unlessCurrent`, the cached one when another thread loaded it while this one queued.
    @discardableResult
    func reload(_ context: OperationContext, unlessCurrent: Bool = false) throws(SecureDictionaryError) -> Generation {
        try unlockingIfAllowed(context) { () throws(SecureDictionaryError) in
            try exclusively(context) { deadline throws(SecureDictionaryError) in
                if unlessCurrent, let generation = currentGeneration { return generation }
                return try check(context, deadline).generation
            }
        }
    }

    // MARK: Writes

    /// Applies `body` to the stored entries and writes the result, all or nothing: locks,
    /// check, the change applied to what is stored, encode, write, publish. A keyring found
    /// locked (or awaiting confirmation) at the check, before `body` ran, gets its dialog
    /// when the options allow, then the call starts again with a new deadline, since the
    /// user may have taken a minute.
    func mutate<R, E: Error>(
        _ context: OperationContext, _ body: (inout SecureDictionary.Entries) throws(E) -> R
    ) throws(MutationFailure<E>) -> R {
        var started = ContinuousClock.now
        var deadline = Deadline(after: context.timeout)
        // The stored item, read holding both locks; validated (and cached) if someone else wrote.
        let (locked, check) = try MutationFailure<E>.store { () throws(SecureDictionaryError) in
            try unlockingIfAllowed(context) { () throws(SecureDictionaryError) in
                (started, deadline) = (.now, Deadline(after: context.timeout))
                return try lock(
                    holding: try enterQueue(until: deadline), context, until: deadline, answeringBy: deadline,
                    checkingBy: deadline, forTheWrite: true)
            }
        }
        defer { unlock(locked) }

        // `body` changes an overlay of the stored generation; the write copies the rest.
        var entries = SecureDictionary.Entries(stored: check.generation)
        let result: R
        do throws(E) { result = try body(&entries) } catch { throw .body(error) }
        _ = try MutationFailure<E>.store { [entries] () throws(SecureDictionaryError) in
            try write(entries.overlay, onto: check, context, deadline, waited: check.started - started)
        }
        return result
    }

    /// The second half of a mutation, holding both locks: `overlay` written onto `check`'s
    /// generation (unless the keyring holds exactly that already) and published; returns the
    /// generation stored. `waited` (for the trace): the time spent waiting for others.
    func write(
        _ overlay: Overlay, onto check: Check, _ context: OperationContext, _ deadline: Deadline, waited: Duration
    ) throws(SecureDictionaryError) -> Generation {
        let written = try Generation.writing(overlay, onto: check.generation, limits: context.limits, logger: context.logger)
        let digest = StoredDigest(of: written.bytes)
        guard digest != check.digest else { return check.generation }  // the keyring holds exactly this already

        do throws(SecureDictionaryError) {
            try store.store(
                SecretBytes(viewing: written.bytes, keptBy: written), for: item, timeout: try deadline.remainingForCall())
        } catch {
            if error.leavesWriteOutcomeUnknown { markOutcomeUnknown() }
            context.logger.debug("write failed", metadata: ["item": "\(item.name)", "error": "\(error)"])
            throw error
        }
        // The residual window a writer that skips the lock can slip into (the reliability suite measures it).
        let window = ContinuousClock.now - check.finished
        setLoaded(written, digest: digest)
        context.logger.trace(
            "stored",
            metadata: [
                "item": "\(item.name)", "entries": "\(written.count)", "bytes": "\(written.size)",
                "lock-wait-us": "\(waited.microseconds)", "check-to-write-us": "\(window.microseconds)",
            ])
        return written
    }

    /// Deletes the item from the store (under both locks), leaving an empty, loaded cache.
    func deleteItem(_ context: OperationContext) throws(SecureDictionaryError) -> Bool {
        try unlockingIfAllowed(context) { () throws(SecureDictionaryError) in
            try exclusively(context) { deadline throws(SecureDictionaryError) -> Bool in
                let locked = try writerLock?.acquire(waitingUntil: deadline, answeringBy: deadline) ?? false
                defer { if locked { writerLock?.release() } }
                let writing = try writeLock?.acquireQueued(until: deadline)
                defer { writing?.release() }
                let existed: Bool
                do throws(SecureDictionaryError) {
                    existed = try store.delete(item, timeout: try deadline.remainingForCall())
                } catch {
                    if error.leavesWriteOutcomeUnknown { markOutcomeUnknown() }
                    throw error
                }
                setLoaded(.empty, digest: .absent)  // the deleted generation is wiped once no read holds it
                return existed
            }
        }
    }

    // MARK: The check

    /// What a check read: the stored generation and the digest of the stored blob.
    struct Check {
        var generation: Generation
        var digest: StoredDigest
        var started: ContinuousClock.Instant
        var finished: ContinuousClock.Instant
    }

    /// Reads the stored item. Its generation is the cached one when its digest is the
    /// cache's, else a new one holding the stored blob (validated), which then becomes the
    /// cache. Call it holding the item's queue.
    func check(_ context: OperationContext, _ deadline: Deadline) throws(SecureDictionaryError) -> Check {
        let started = ContinuousClock.now
        guard let stored = try store.load(item, timeout: try deadline.remainingForCall()) else {
            setLoaded(.empty, digest: .absent)
            return Check(generation: .empty, digest: .absent, started: started, finished: .now)
        }
        let finished = ContinuousClock.now
        let digest = stored.withUnsafeBytes { StoredDigest(of: $0) }
        if let current = cached({ $0 == digest }) {
            return Check(generation: current, digest: digest, started: started, finished: finished)
        }
        let generation = try stored.withUnsafeBytes { bytes throws(SecureDictionaryError) in
            try Generation(copying: bytes, limits: context.limits, logger: context.logger)
        }
        setLoaded(generation, digest: digest)
        return Check(generation: generation, digest: digest, started: started, finished: finished)
    }

    // MARK: Helpers

    /// Runs `body` holding the item's queue, with the call's deadline.
    private func exclusively<T>(
        _ context: OperationContext, _ body: (Deadline) throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        let deadline = Deadline(after: context.timeout)
        let queue = try enterQueue(until: deadline)
        defer { queue.leave() }
        return try body(deadline)
    }

    /// The one place the cache becomes loaded: also tells observers what changed. The
    /// generation replaced is released outside the lock.
    private func setLoaded(_ generation: Generation, digest: StoredDigest) {
        let replaced = cache.withLock { cache in
            defer { cache = (generation, digest) }
            return cache
        }
        withExtendedLifetime(replaced) {}
        publish(generation)
    }

    /// After a write that may or may not have landed: keep what non-throwing reads see, but
    /// trust it no more (the next throwing read or write reloads).
    private func markOutcomeUnknown() {
        cache.withLock { $0?.digest = .unknown }
    }
}
