import Logging
import Synchronization

/// How one call is to be made: the deadline of each keyring call and the size limits.
struct OperationContext: Sendable {
    var timeout: Duration
    var limits: PropertyListLimits
    var logger: Logger
}

/// Why a mutation failed: the keyring side, or the caller's own closure.
enum MutationFailure<BodyError: Error>: Error {
    case store(SecureDictionaryError)
    case body(BodyError)
}

/// One keyring item as this process knows it, shared by every ``SecureDictionary`` instance
/// of that item (see ``ItemRegistry``).
///
/// Rules, and why:
/// 1. One load or mutation at a time in the process (`serial`), and one writer at a time
///    across processes (``ProcessWriterLock``): a read-modify-write never interleaves.
/// 2. A mutation works on the stored state: it re-reads the item under the lock unless the
///    write stamp proves nobody wrote since this process last read it.
/// 3. Encode and size-check first, write second, update the cache last: a failed write
///    leaves the cache equal to the store. A write with an unknown outcome leaves the cache
///    `needsLoad`, so the next use reloads instead of trusting either version.
/// 4. Nothing is written unless the current stored blob was loaded and decoded.
/// 5. Reads take only the short `cache` lock, never the keyring.
final class ItemState: Sendable {
    enum Cache {
        case needsLoad
        case loaded(entries: [String: PropertyListValue], stamp: WriteStamp)
    }

    let item: KeyringItem
    let store: any KeyringStore
    private let writerLock: ProcessWriterLock?
    private let serial = Mutex(())
    private let cache = Mutex(Cache.needsLoad)
    private let observers = Mutex(Observers())

    /// Who listens to ``SecureDictionary/changes()``, and what they were last told.
    private struct Observers {
        var nextID: UInt64 = 0
        var continuations: [UInt64: AsyncStream<SecureDictionary.Change>.Continuation] = [:]
        /// The entries observers last saw: changes are computed against these. Kept only
        /// while someone observes, and dropped by forget() (it holds secrets).
        var published: [String: PropertyListValue]?
        var watcher: LockFileWatcher?
        var context: OperationContext?
        var failureHandler: (@Sendable (SecureDictionaryError) -> Void)?
    }

    init(item: KeyringItem, store: any KeyringStore, lockDirectory: String?) throws(SecureDictionaryError) {
        self.item = item
        self.store = store
        writerLock = store.isSharedBetweenProcesses
            ? try ProcessWriterLock(item: item, directory: lockDirectory) : nil
    }

    deinit {
        cache.withLock { Self.drop(&$0) }
    }

    // MARK: Reads

    /// The cached entries, or `nil` when they must be loaded first.
    var cachedEntries: [String: PropertyListValue]? {
        cache.withLock { cache in
            if case .loaded(let entries, _) = cache { return entries }
            return nil
        }
    }

    /// The entries, loading them first when the cache is empty or stale.
    func entries(_ context: OperationContext) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        if let entries = cachedEntries { return entries }
        return try serial.withLock { _ throws(SecureDictionaryError) in
            if let entries = cachedEntries { return entries }   // another thread loaded meanwhile
            return try loadLocked(context)
        }
    }

    /// The entries for a new instance: the cache when the write stamp proves it current
    /// (no SecureDictionary writer in any process wrote since it was read), else a load.
    func currentEntries(_ context: OperationContext) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        try serial.withLock { _ throws(SecureDictionaryError) in try currentEntriesLocked(context) }
    }

    /// Loads the item from the store, replacing the cache on success only.
    @discardableResult
    func reload(_ context: OperationContext) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        try serial.withLock { _ throws(SecureDictionaryError) in try loadLocked(context) }
    }

    /// Drops the cache and wipes the `Data` bytes it owns; the next use loads again.
    func forget() {
        serial.withLock { _ in
            cache.withLock { Self.drop(&$0) }
            observers.withLock { observers in
                if var published = observers.published {
                    observers.published = nil
                    Wipe.entries(&published)
                }
            }
        }
    }

    // MARK: Writes

    /// Applies `body` to the current stored entries and writes the result, all or nothing.
    func mutate<R, E: Error>(
        _ context: OperationContext, _ body: (inout [String: PropertyListValue]) throws(E) -> R
    ) throws(MutationFailure<E>) -> R {
        try serial.withLock { _ throws(MutationFailure<E>) -> R in
            do throws(SecureDictionaryError) { try writerLock?.lock(timeout: context.timeout) } catch { throw .store(error) }
            defer { writerLock?.unlock() }

            var entries: [String: PropertyListValue]
            do throws(SecureDictionaryError) { entries = try currentEntriesLocked(context) } catch { throw .store(error) }
            let result: R
            do throws(E) { result = try body(&entries) } catch { throw .body(error) }

            var bytes: [UInt8]
            do throws(SecureDictionaryError) { bytes = try Self.encode(entries, context.limits) } catch { throw .store(error) }
            defer { Wipe.bytes(&bytes) }
            do throws(SecureDictionaryError) {
                try store.store(bytes, for: item, timeout: context.timeout)
            } catch {
                if error.leavesWriteOutcomeUnknown {
                    writerLock?.writeNewStamp()
                    cache.withLock { $0 = .needsLoad }
                }
                context.logger.debug("write failed", metadata: ["item": "\(item.name)", "error": "\(error)"])
                throw .store(error)
            }
            let stamp = writerLock?.writeNewStamp() ?? .none
            setLoaded(entries, stamp: stamp)
            context.logger.trace("stored", metadata: ["item": "\(item.name)", "entries": "\(entries.count)", "bytes": "\(bytes.count)"])
            return result
        }
    }

    /// Deletes the item from the store (under both locks), leaving an empty, loaded cache.
    func deleteItem(_ context: OperationContext) throws(SecureDictionaryError) -> Bool {
        try serial.withLock { _ throws(SecureDictionaryError) -> Bool in
            try writerLock?.lock(timeout: context.timeout)
            defer { writerLock?.unlock() }
            let existed: Bool
            do throws(SecureDictionaryError) {
                existed = try store.delete(item, timeout: context.timeout)
            } catch {
                if error.leavesWriteOutcomeUnknown {
                    writerLock?.writeNewStamp()
                    cache.withLock { $0 = .needsLoad }
                }
                throw error
            }
            let stamp = writerLock?.writeNewStamp() ?? .none
            cache.withLock { Self.drop(&$0) }
            setLoaded([:], stamp: stamp)
            return existed
        }
    }

    // MARK: Observation

    /// A stream of changes; the first observer starts the cross-process watcher.
    func observeChanges(
        _ context: OperationContext, failureHandler: (@Sendable (SecureDictionaryError) -> Void)?
    ) -> AsyncStream<SecureDictionary.Change> {
        let (stream, continuation) = AsyncStream<SecureDictionary.Change>.makeStream()
        let id: UInt64 = observers.withLock { observers in
            let id = observers.nextID
            observers.nextID += 1
            if observers.continuations.isEmpty {
                observers.published = cachedEntries
                observers.context = context
                observers.failureHandler = failureHandler
                if let path = writerLock?.path {
                    observers.watcher = LockFileWatcher(path: path) { [weak self] in self?.refreshAfterForeignWrite() }
                }
            }
            observers.continuations[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in self?.stopObserving(id) }
        return stream
    }

    private func stopObserving(_ id: UInt64) {
        observers.withLock { observers in
            observers.continuations[id] = nil
            if observers.continuations.isEmpty {
                observers.watcher?.stop()
                observers.watcher = nil
                observers.published = nil
                observers.failureHandler = nil
            }
        }
    }

    /// Called by the watcher: reloads once if the stamp shows that someone else wrote.
    private func refreshAfterForeignWrite() {
        guard let (context, failureHandler) = observers.withLock({ observers in
            observers.context.map { ($0, observers.failureHandler) }
        }) else { return }
        do throws(SecureDictionaryError) {
            try serial.withLock { _ throws(SecureDictionaryError) in
                let observed = writerLock?.readStamp() ?? .none
                let current: Bool = cache.withLock { cache in
                    if case .loaded(_, let stamp) = cache { return stamp == observed }
                    return false
                }
                if !current { _ = try loadLocked(context) }
            }
        } catch {
            context.logger.error("reload after another process wrote failed",
                                 metadata: ["item": "\(item.name)", "error": "\(error)"])
            failureHandler?(error)
        }
    }

    // MARK: Under `serial`

    /// The cached entries when the write stamp proves them current, else a fresh load.
    private func currentEntriesLocked(_ context: OperationContext) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        let observed = writerLock?.readStamp() ?? .none
        let current: [String: PropertyListValue]? = cache.withLock { cache in
            if case .loaded(let entries, let stamp) = cache, stamp == observed { return entries }
            return nil
        }
        if let current { return current }
        return try loadLocked(context)
    }

    private func loadLocked(_ context: OperationContext) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        let stamp = writerLock?.readStamp() ?? .none   // before the item: see ProcessWriterLock
        guard var bytes = try store.load(item, timeout: context.timeout) else {
            setLoaded([:], stamp: stamp)
            return [:]
        }
        defer { Wipe.bytes(&bytes) }
        let entries = try Self.decode(bytes, context.limits)
        setLoaded(entries, stamp: stamp)
        context.logger.trace("loaded", metadata: ["item": "\(item.name)", "entries": "\(entries.count)"])
        return entries
    }

    /// The one place the cache becomes loaded: also tells observers what changed.
    private func setLoaded(_ entries: [String: PropertyListValue], stamp: WriteStamp) {
        cache.withLock { $0 = .loaded(entries: entries, stamp: stamp) }
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

    private static func drop(_ cache: inout Cache) {
        if case .loaded(var entries, _) = cache {
            cache = .needsLoad
            Wipe.entries(&entries)
        }
        cache = .needsLoad
    }

    // MARK: Codec

    static func decode(_ bytes: [UInt8], _ limits: PropertyListLimits) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        do throws(BinaryPropertyListError) {
            return try BinaryPropertyList.decode(bytes, limits: limits)
        } catch {
            throw SecureDictionaryError(error)
        }
    }

    static func encode(_ entries: [String: PropertyListValue], _ limits: PropertyListLimits) throws(SecureDictionaryError) -> [UInt8] {
        do throws(BinaryPropertyListError) {
            return try BinaryPropertyList.encode(entries, limits: limits)
        } catch {
            throw SecureDictionaryError(error)
        }
    }
}

extension SecureDictionaryError {
    init(_ error: BinaryPropertyListError) {
        switch error {
        case .corrupt(let reason): self = .corrupt(reason: reason)
        case .unsupportedVersion(let version): self = .unsupportedFormatVersion(version)
        case .tooLarge(let size, let limit): self = .tooLarge(size: size, limit: limit)
        case .invalidValue(let reason): self = .invalidValue(reason: reason)
        }
    }
}
