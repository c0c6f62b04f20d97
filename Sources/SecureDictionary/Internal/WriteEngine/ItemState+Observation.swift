import Logging
import Synchronization

/// ``SecureDictionary/changes()``: who listens, what they were last told, and the watcher of
/// the keyring that tells this state to look again.
extension ItemState {
    /// Who listens to ``SecureDictionary/changes()``, and what they were last told.
    struct Observers {
        var nextID: UInt64 = 0
        var continuations: [UInt64: AsyncStream<SecureDictionary.Change>.Continuation] = [:]
        /// The generation observers last saw: changes are computed against it. Kept only
        /// while someone observes (its region stays alive meanwhile).
        var published: Generation?
        var watcher: (any ChangeWatch)?
        var context: OperationContext?
        var failureHandler: (@Sendable (SecureDictionaryError) -> Void)?
    }

    /// A stream of changes; the first observer starts watching the keyring.
    func observeChanges(
        _ context: OperationContext, failureHandler: (@Sendable (SecureDictionaryError) -> Void)?
    ) -> AsyncStream<SecureDictionary.Change> {
        let (stream, continuation) = AsyncStream<SecureDictionary.Change>.makeStream()
        let id: UInt64 = observers.withLock { observers in
            let id = observers.nextID
            observers.nextID += 1
            if observers.continuations.isEmpty {
                observers.published = cachedGeneration
                observers.context = context
                observers.failureHandler = failureHandler
                observers.watcher = (store as? any CoordinatedStore)?.watchChanges { [weak self] change in
                    if change == .items { self?.refreshAfterChange() }
                }
            }
            observers.continuations[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in self?.stopObserving(id) }
        return stream
    }

    private func stopObserving(_ id: UInt64) {
        let watcher: (any ChangeWatch)? = observers.withLock { observers in
            observers.continuations[id] = nil
            guard observers.continuations.isEmpty else { return nil }
            defer {
                observers.watcher = nil
                observers.published = nil
                observers.failureHandler = nil
            }
            return observers.watcher
        }
        watcher?.stop()
    }

    /// Called by the watcher after some item changed: reads the item, and reloads (telling
    /// observers) only if its blob differs from the one cached.
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
