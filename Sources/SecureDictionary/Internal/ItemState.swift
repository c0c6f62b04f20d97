import Logging
import Synchronization

/// How one call is to be made: its deadline and the size limits.
struct OperationContext: Sendable {
    /// The time one public call may take in all, waits included.
    var timeout: Duration
    /// Whether a locked keyring may be unlocked with its dialog (then the call runs again).
    var unlock: SecureDictionary.Options.UnlockPolicy = .never
    var limits: PropertyListLimits
    var logger: Logger
}

/// Why a mutation failed: the keyring side, or the caller's own closure.
enum MutationFailure<BodyError: Error>: Error {
    case store(SecureDictionaryError)
    case body(BodyError)

    /// Runs keyring-side work, reporting its error as `.store`.
    static func store<T>(_ work: () throws(SecureDictionaryError) -> T) throws(MutationFailure) -> T {
        do { return try work() } catch { throw .store(error) }
    }
}

/// One keyring item as this process knows it, shared by every ``SecureDictionary`` instance
/// of that item (see ``ItemRegistry``).
///
/// Rules, and why:
/// 1. The keyring is the truth. Before every write, under the locks, the writer reads the
///    stored item and compares its ``StoredDigest`` with that of the blob this process last
///    loaded or wrote: equal means the cache is current (no decode); different means someone
///    wrote (another process, another tool), so the blob is decoded and the change is applied
///    onto it. No local file or stamp is trusted to prove that nobody wrote.
/// 2. Locks are for fairness and efficiency: one load or mutation at a time in the process
///    (`serial`), one writer at a time across the processes that take part (an
///    ``ItemWriterLock``). What they cannot cover, a writer that does not take part, can
///    only slip in between the check and the write: one keyring round trip.
/// 3. One deadline bounds the whole call: waiting for `serial`, for the writer lock, and
///    each keyring call get what is left of it.
/// 4. Encode and size-check first, write second, update the cache last: a failed write
///    leaves the cache equal to the store. A write with an unknown outcome keeps the last
///    known entries for non-throwing reads but marks them ``StoredDigest/unknown``, so the
///    next throwing read or write reloads instead of trusting either version.
/// 5. Nothing is written unless the current stored blob was loaded and decoded, and nothing
///    is written when the new blob equals the stored one.
/// 6. Non-throwing reads take only the short `cache` lock and never load: they answer from
///    a loaded cache or not at all (`nil` from ``cachedEntries``). Only ``forget(_:)``
///    unloads.
/// 7. The check waits on the keyring; encoding a large dictionary is CPU work. For the
///    library's own one-key changes, whose closure has no other effect, the change is applied
///    to the cached entries and encoded on another thread while the check is out. That work
///    is used only when the check finds the cache current (the usual case); otherwise it is
///    wiped and the change is applied to what the check read. After a check that found the
///    cache stale (another writer is active), the next write does not speculate.
/// 8. A one-key change (``KeyEdit``) needs no encode at all when the stored blob is in the
///    layout the splice supports (what SecureDictionary wrote, ASCII keys): its blob is
///    spliced from the blob the check read, whether that was the cache's or another writer's,
///    with a few bulk copies. Whether the last splice worked decides whether the next one-key
///    change speculates instead (rule 7), so a dictionary the splice cannot handle writes as
///    fast as before it existed.
/// 9. When the check finds another writer's blob and a one-key change splices it, the blob
///    is written first and decoded after the writer lock is released: the lock is held for
///    a read, a splice and a write, as when the cache is current, so writers taking turns
///    wait for no decode. It is safe because the splice accepts only blobs the reader
///    decodes (``BinaryPropertyListSplice``), so rule 5 holds: the blob is decoded, later.
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
    /// Whether the last check found the cache current. When it did not (another process is
    /// writing too), a speculative encode would likely be wasted, so none is made (rule 7).
    private let lastCheckFoundCacheCurrent = Atomic<Bool>(true)
    /// Whether the last one-key change could splice the stored blob (rule 8); until one
    /// could not, one-key changes do not speculate.
    private let lastSpliceWorked = Atomic<Bool>(true)
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

    /// The cached entries (also after a write whose outcome is unknown), or `nil` when
    /// unloaded. Never loads, never waits for a keyring call.
    var cachedEntries: [String: PropertyListValue]? {
        cache.withLock { cache in
            if case .loaded(let entries, _) = cache { return entries }
            return nil
        }
    }

    /// The cached entries when they are known to be what this process last loaded or wrote.
    private var currentEntries: [String: PropertyListValue]? { currentCache?.entries }

    /// ``currentEntries`` with the digest of the blob they came from.
    private var currentCache: (entries: [String: PropertyListValue], digest: StoredDigest)? {
        cache.withLock { cache in
            if case .loaded(let entries, let digest) = cache, digest != .unknown { return (entries, digest) }
            return nil
        }
    }

    /// The entries, loading them first when unloaded or after a write whose outcome is unknown.
    func entries(_ context: OperationContext) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        if let entries = currentEntries { return entries }
        return try unlockingIfAllowed(context) { () throws(SecureDictionaryError) in
            try exclusively(context) { deadline throws(SecureDictionaryError) in
                if let entries = currentEntries { return entries }  // another thread loaded meanwhile
                return try checkedEntries(context.limits, deadline).entries
            }
        }
    }

    /// The stored entries, read from the keyring (decoded only when they changed).
    @discardableResult
    func reload(_ context: OperationContext) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        try unlockingIfAllowed(context) { () throws(SecureDictionaryError) in
            try exclusively(context) { deadline throws(SecureDictionaryError) in
                try checkedEntries(context.limits, deadline).entries
            }
        }
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

    /// Drops the cache and wipes the `Data` bytes it owns: the state is unloaded until a
    /// throwing read, a write or ``reload(_:)`` loads it again.
    ///
    /// Waits for a load or write in progress up to the deadline, and drops the cache then
    /// whatever happens.
    func forget(_ context: OperationContext) {
        let locked = serial.lock(until: Deadline(after: context.timeout))
        defer { if locked { serial.unlock() } }
        cache.withLock { Self.drop(&$0) }
        observers.withLock { observers in
            if var published = observers.published {
                observers.published = nil
                Wipe.entries(&published)
            }
        }
    }

    // MARK: Writes

    /// Applies `body` to the stored entries and writes the result, all or nothing.
    ///
    /// `bodyIsPure`: `body` has no effect but on the entries it is given (the library's own
    /// one-key changes), so it may run twice (rule 7). Never pass `true` for a caller's closure.
    /// `edit`: `body` makes exactly this one-key change, so the blob is spliced from the stored
    /// one (rule 8).
    func mutate<R, E: Error>(
        _ context: OperationContext, bodyIsPure: Bool = false, edit: KeyEdit? = nil,
        _ body: (inout [String: PropertyListValue]) throws(E) -> R
    ) throws(MutationFailure<E>) -> R {
        var checked = false
        do {
            return try mutateOnce(context, bodyIsPure: bodyIsPure, edit: edit, checked: &checked, body)
        } catch .store(.locked) where !checked && context.unlock != .never {
            // Locked at the check, before `body` ran: unlock, then start again (with a new
            // deadline, since the user may have taken a minute).
            try MutationFailure<E>.store { () throws(SecureDictionaryError) in try unlockInteractively(context) }
            return try mutateOnce(context, bodyIsPure: bodyIsPure, edit: edit, checked: &checked, body)
        }
    }

    /// One try of ``mutate(_:bodyIsPure:_:)``; `checked` is set once the stored item was read
    /// (so a failure after it may have run `body`).
    private func mutateOnce<R, E: Error>(
        _ context: OperationContext, bodyIsPure: Bool, edit: KeyEdit?, checked: inout Bool,
        _ body: (inout [String: PropertyListValue]) throws(E) -> R
    ) throws(MutationFailure<E>) -> R {
        let started = ContinuousClock.now
        let deadline = Deadline(after: context.timeout)
        guard serial.lock(until: deadline) else { throw .store(.timedOut) }
        defer { serial.unlock() }
        let speculating = ContinuousClock.now
        let splicing = edit != nil && lastSpliceWorked.load(ordering: .relaxed)
        let speculation = bodyIsPure && !splicing ? try speculate(context, body) : nil
        let speculated = ContinuousClock.now - speculating
        var (locked, check) = try MutationFailure<E>.store { () throws(SecureDictionaryError) in
            do throws(SecureDictionaryError) {
                return try lockedCheck(context.limits, deadline, decodingChanges: edit == nil)
            } catch {
                speculation?.write.discard()
                throw error
            }
        }
        defer { if locked { writerLock?.release() } }
        checked = true
        // Waiting for other threads and other processes (what fair queueing bounds): the time
        // to here, less the speculation and the check whose answer is used.
        let waited = (ContinuousClock.now - started) - speculated - (check.finished - check.started)
        let checked = check.finished

        // The entries written and the body's result; `nil` while another writer's blob waits
        // to be decoded after the write (rule 9).
        var applied: (entries: [String: PropertyListValue], result: R)?
        var bytes: [UInt8] = []
        defer { Wipe.bytes(&bytes) }
        let speculationHolds = try MutationFailure<E>.store { () throws(SecureDictionaryError) -> Bool in
            try speculation?.write.moveBlob(into: &bytes, ifStoredIs: check.digest, until: deadline) ?? false
        }
        let splicesFirst = !speculationHolds && check.entries == nil && edit != nil && check.stored != nil
        let deferred = try MutationFailure<E>.store { () throws(SecureDictionaryError) -> [UInt8]? in
            guard splicesFirst, let edit, let stored = check.stored else { return nil }
            return try edit.splice(stored, limits: context.limits)
        }
        if let speculation, speculationHolds {
            applied = (speculation.write.entries, speculation.result)
        } else if let deferred {
            bytes = deferred
            lastSpliceWorked.store(true, ordering: .relaxed)
        } else {
            var entries = try MutationFailure<E>.store { () throws(SecureDictionaryError) in try decodedEntries(of: check) }
            let result: R
            do throws(E) { result = try body(&entries) } catch { throw .body(error) }
            bytes = try MutationFailure<E>.store { [entries] () throws(SecureDictionaryError) in
                guard let edit else { return try BinaryPropertyList.blob(of: entries, limits: context.limits) }
                let (blob, spliced) = try edit.blob(
                    for: entries, from: splicesFirst ? nil : check.stored, limits: context.limits)  // tried above
                lastSpliceWorked.store(spliced, ordering: .relaxed)
                return blob
            }
            applied = (entries, result)
            check.stored = nil  // wiped now: the store call's own copies are the peak of memory
        }
        let written = StoredDigest(of: bytes)
        if written == check.digest {  // the keyring already holds exactly this
            if let applied { return applied.result }
            let (entries, result) = try afterDeferredDecode(of: check, context, body)
            setLoaded(entries, digest: written)
            return result
        }
        do throws(SecureDictionaryError) {
            if locked, let writerLock, let store = store as? any CoordinatedStore {
                try store.store(bytes, for: item, timeout: try deadline.remainingForCall(), handingOn: writerLock)
            } else {
                try store.store(bytes, for: item, timeout: try deadline.remainingForCall())
            }
        } catch {
            // The cache becomes what the check read, as it would have without rule 9.
            if applied == nil { _ = try? decodedEntries(of: check) }
            if error.leavesWriteOutcomeUnknown { markOutcomeUnknown() }
            context.logger.debug("write failed", metadata: ["item": "\(item.name)", "error": "\(error)"])
            throw .store(error)
        }
        // From the check's answer to the write's: the most a writer that does not take the
        // lock can slip in between (the residual window, measured by the reliability suite).
        let window = ContinuousClock.now - checked
        if applied == nil, locked {
            // Rule 9: the other writers wait no longer for this one.
            writerLock?.release()
            locked = false
        }
        let entries: [String: PropertyListValue]
        let result: R
        if let applied {
            (entries, result) = applied
        } else {
            (entries, result) = try afterDeferredDecode(of: check, context, body)
        }
        assert(
            edit == nil || KeyEdit.matchesFullEncode(bytes, entries, context.limits), "a splice differs from the full encode")
        setLoaded(entries, digest: written)
        context.logger.trace(
            "stored",
            metadata: [
                "item": "\(item.name)", "entries": "\(entries.count)", "bytes": "\(bytes.count)",
                "lock-wait-us": "\(Self.microseconds(waited))", "check-to-write-us": "\(Self.microseconds(window))",
            ])
        return result
    }

    /// Rule 7: applies a pure `body` to the cached entries and starts encoding the result on
    /// another thread, to overlap with the check. `nil` when there is nothing to gain: no
    /// current cache, one so small that encoding costs less than the thread hop, or another
    /// writer active (the last check found the cache stale).
    private func speculate<R, E: Error>(
        _ context: OperationContext, _ body: (inout [String: PropertyListValue]) throws(E) -> R
    ) throws(MutationFailure<E>) -> (write: SpeculativeWrite, result: R)? {
        guard let current = currentCache, current.entries.count >= SpeculativeWrite.minimumEntries,
            lastCheckFoundCacheCurrent.load(ordering: .relaxed)
        else { return nil }
        var entries = current.entries
        let result: R
        do throws(E) { result = try body(&entries) } catch { throw .body(error) }
        return (SpeculativeWrite(entries: entries, basedOn: current.digest, limits: context.limits), result)
    }

    /// Deletes the item from the store (under both locks), leaving an empty, loaded cache.
    func deleteItem(_ context: OperationContext) throws(SecureDictionaryError) -> Bool {
        try unlockingIfAllowed(context) { () throws(SecureDictionaryError) in try deleteItemOnce(context) }
    }

    private func deleteItemOnce(_ context: OperationContext) throws(SecureDictionaryError) -> Bool {
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
            cache.withLock { Self.drop(&$0) }
            setLoaded([:], digest: .absent)
            return existed
        }
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

    /// Rule 9, after the write of a splice of another writer's blob: that blob decoded, with
    /// `body` applied (it makes the splice's one-key change, so it cannot throw).
    private func afterDeferredDecode<R, E: Error>(
        of check: TimedCheck, _ context: OperationContext, _ body: (inout [String: PropertyListValue]) throws(E) -> R
    ) throws(MutationFailure<E>) -> (entries: [String: PropertyListValue], result: R) {
        do throws(MutationFailure<E>) {
            var entries = try MutationFailure<E>.store { () throws(SecureDictionaryError) in
                try BinaryPropertyList.entries(of: check.stored?.bytes ?? [], limits: context.limits)
            }
            let result: R
            do throws(E) { result = try body(&entries) } catch { throw .body(error) }
            return (entries, result)
        } catch {
            // Not for a blob the splice accepted: written, but what it holds is unknown here.
            assertionFailure("a spliced blob did not decode, or a one-key change threw")
            markOutcomeUnknown()
            throw error
        }
    }

    /// The entries of the blob `check` read: the cache's when it was current, else decoded
    /// now, becoming the cache.
    private func decodedEntries(of check: TimedCheck) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        if let entries = check.entries { return entries }
        let entries = try BinaryPropertyList.entries(of: check.stored?.bytes ?? [], limits: check.limits)
        setLoaded(entries, digest: check.digest)
        return entries
    }

    /// Takes the writer lock, when the store has one, and checks the stored item under it.
    /// `decodingChanges: false` leaves a changed blob undecoded in the result (rule 9).
    private func lockedCheck(
        _ limits: PropertyListLimits, _ deadline: Deadline, decodingChanges: Bool
    ) throws(SecureDictionaryError) -> (locked: Bool, checked: TimedCheck) {
        let check = { () throws(SecureDictionaryError) -> TimedCheck in
            let started = ContinuousClock.now
            var stored: [UInt8] = []
            defer { Wipe.bytes(&stored) }
            let (entries, digest) = try self.checkedEntries(limits, deadline, keeping: &stored, decodingChanges: decodingChanges)
            return TimedCheck(
                entries: entries, digest: digest, stored: stored.isEmpty ? nil : StoredBlob(taking: &stored),
                limits: limits, started: started, finished: .now)
        }
        guard let writerLock else { return (false, try check()) }
        let (held, checked) = try writerLock.acquire(until: deadline, thenCheck: check)
        return (held, checked)
    }

    /// A check's answer and when it was asked and answered.
    private struct TimedCheck {
        /// `nil` when the blob changed and its decode was left for later (rule 9).
        var entries: [String: PropertyListValue]?
        var digest: StoredDigest
        /// The blob read, for a ``KeyEdit`` to splice (`nil`: no item).
        var stored: StoredBlob?
        var limits: PropertyListLimits
        var started: ContinuousClock.Instant
        var finished: ContinuousClock.Instant
    }

    /// Reads the stored item and returns its entries with its digest: the cached entries when
    /// the digest matches the cache's, else the decoded blob, which then becomes the cache.
    /// Call it holding `serial`.
    private func checkedEntries(
        _ limits: PropertyListLimits, _ deadline: Deadline
    ) throws(SecureDictionaryError) -> (entries: [String: PropertyListValue], digest: StoredDigest) {
        var bytes: [UInt8] = []
        defer { Wipe.bytes(&bytes) }
        let (entries, digest) = try checkedEntries(limits, deadline, keeping: &bytes, decodingChanges: true)
        return (entries ?? [:], digest)  // decoded: never nil
    }

    /// ``checkedEntries(_:_:)`` that leaves the blob read in `bytes` (empty when there is no
    /// item), for the caller to use and wipe; with `decodingChanges: false`, a blob that
    /// changed is not decoded (`entries` is `nil`).
    private func checkedEntries(
        _ limits: PropertyListLimits, _ deadline: Deadline, keeping bytes: inout [UInt8], decodingChanges: Bool
    ) throws(SecureDictionaryError) -> (entries: [String: PropertyListValue]?, digest: StoredDigest) {
        guard var loaded = try store.load(item, timeout: try deadline.remainingForCall()) else {
            setLoaded([:], digest: .absent)
            return ([:], .absent)
        }
        swap(&bytes, &loaded)
        let digest = StoredDigest(of: bytes)
        let current: [String: PropertyListValue]? = cache.withLock { cache in
            if case .loaded(let entries, let cached) = cache, cached == digest { return entries }
            return nil
        }
        lastCheckFoundCacheCurrent.store(current != nil, ordering: .relaxed)
        if let current { return (current, digest) }
        guard decodingChanges else { return (nil, digest) }
        let entries = try BinaryPropertyList.entries(of: bytes, limits: limits)
        setLoaded(entries, digest: digest)
        return (entries, digest)
    }

    /// The one place the cache becomes loaded: also tells observers what changed.
    private func setLoaded(_ entries: [String: PropertyListValue], digest: StoredDigest) {
        cache.withLock { $0 = .loaded(entries: entries, digest: digest) }
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

    private static func microseconds(_ duration: Duration) -> Int64 {
        duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
    }

    private static func drop(_ cache: inout Cache) {
        if case .loaded(var entries, _) = cache {
            cache = .unloaded
            Wipe.entries(&entries)
        }
        cache = .unloaded
    }
}
