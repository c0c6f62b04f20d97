import Logging
import Synchronization

/// ``SecureDictionary/changes()`` and ``SecureDictionary/changes(forKey:)``: who listens, to
/// which keys, what they were last told, and the keyring's watcher.
extension ItemState {
    /// Who listens to the changes, and what they were last told.
    struct Observers {
        var nextID: UInt64 = 0
        var listeners: [UInt64: Listener] = [:]
        /// The generation observers last saw: changes are computed against it. Kept only
        /// while someone observes (its region stays alive meanwhile).
        var published: Generation?
        var watcher: (any ChangeWatch)?
        var context: OperationContext?
        var failureHandler: (@Sendable (SecureDictionaryError) -> Void)?
    }

    /// One stream of changes: of every entry (`keys` is `nil`), or of the entries `keys` name
    /// (by their Unicode scalars), whose changes alone are compared and decoded.
    struct Listener {
        let keys: [String]?
        let continuation: AsyncStream<SecureDictionary.Change>.Continuation
    }

    /// A stream of changes to every entry (`keys` is `nil`) or to those `keys` names; the
    /// first observer starts watching the keyring.
    func observeChanges(
        _ context: OperationContext, failureHandler: (@Sendable (SecureDictionaryError) -> Void)?, keys: [String]? = nil
    ) -> AsyncStream<SecureDictionary.Change> {
        let (stream, continuation) = AsyncStream<SecureDictionary.Change>.makeStream()
        let id: UInt64 = observers.withLock { observers in
            let id = observers.nextID
            observers.nextID += 1
            if observers.listeners.isEmpty {
                observers.published = cachedGeneration
                observers.context = context
                observers.failureHandler = failureHandler
                observers.watcher = (store as? any CoordinatedStore)?.watchChanges { [weak self] change in
                    if change == .items { self?.refreshAfterChange() }
                }
            }
            observers.listeners[id] = Listener(keys: keys, continuation: continuation)
            return id
        }
        continuation.onTermination = { [weak self] _ in self?.stopObserving(id) }
        return stream
    }

    /// Tells every listener what changed from the generation they last saw to `generation`
    /// (called by `setLoaded`). A listener of some keys compares only those, in place, so a
    /// change elsewhere decodes nothing for it.
    func publish(_ generation: Generation) {
        let (previous, listeners) = observers.withLock { observers in
            guard !observers.listeners.isEmpty else { return (Generation?.none, [Listener]()) }
            defer { observers.published = generation }
            return (observers.published, Array(observers.listeners.values))
        }
        guard let previous, previous !== generation, !listeners.isEmpty else { return }
        let everyEntry = listeners.filter { $0.keys == nil }
        if !everyEntry.isEmpty {
            for change in generation.changes(since: previous) {
                for listener in everyEntry { listener.continuation.yield(change) }
            }
        }
        for listener in listeners {
            for key in listener.keys ?? [] {
                if let change = generation.change(of: key, since: previous) { listener.continuation.yield(change) }
            }
        }
    }

    private func stopObserving(_ id: UInt64) {
        let watcher: (any ChangeWatch)? = observers.withLock { observers in
            observers.listeners[id] = nil
            guard observers.listeners.isEmpty else { return nil }
            defer {
                observers.watcher = nil
                observers.published = nil
                observers.failureHandler = nil
            }
            return observers.watcher
        }
        watcher?.stop()
    }

    /// Called by the watcher after some item changed: reloads (telling observers) if the blob changed.
    private func refreshAfterChange() {
        guard
            let (context, failureHandler) = observers.withLock({ observers in
                observers.context.map { ($0, observers.failureHandler) }
            })
        else { return }
        do throws(SecureDictionaryError) {
            try reload(context)
        } catch {
            context.logger.error(
                "reload after a change in the keyring failed",
                metadata: ["item": "\(item.name)", "error": "\(error)"])
            failureHandler?(error)
        }
    }
}
