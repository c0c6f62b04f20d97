package import Logging

/// Serialises the writers of one item across processes, from the check to the write's answer:
/// why that makes the check safe, and what a writer that does not take it can still do, is
/// ``ItemState``'s invariant "the writer lock makes the check safe". A lock that cannot be
/// used at all lets writes go on without it (still checked), never fail.
package protocol ItemWriterLock: Sendable {
    /// This process's queue in front of the lock (``LockQueue/shared(for:)`` its name): hold it
    /// from before ``acquire(waitingUntil:answeringBy:)`` until after ``release()``, as the
    /// lock is granted per process. Throws only when deciding which lock this is (an
    /// ``AutomaticStore`` not used yet) fails.
    func queue(until deadline: Deadline) throws(SecureDictionaryError) -> LockQueue

    /// Waits for the lock until `waitDeadline`, holding ``queue(until:)``, and gives what
    /// decides (the bus) until `answerDeadline` to answer: a passed `waitDeadline`
    /// (`lockWait: .zero`) asks once, so a free lock is taken and a held one is
    /// ``SecureDictionaryError/lockHeld(pid:command:)``, never ``SecureDictionaryError/timedOut``
    /// for want of time to ask. A lock that asks nobody reads `waitDeadline` alone.
    ///
    /// - Returns: `true` when the lock is held (pair with ``release()``), `false` when it
    ///   cannot be used at all; the caller then writes without it.
    /// - Throws: ``SecureDictionaryError/lockHeld(pid:command:)`` when another process still
    ///   holds the lock at the deadline; ``SecureDictionaryError/timedOut`` when what decides
    ///   did not answer by then.
    func acquire(waitingUntil waitDeadline: Deadline, answeringBy answerDeadline: Deadline) throws(SecureDictionaryError)
        -> Bool

    /// Gives the lock back (after an `acquire` that returned `true`), keeping the queue.
    func release()
}

extension ItemWriterLock {
    /// Enters the lock's queue, then takes the lock, both until `deadline`: for a caller that
    /// holds neither (a move, a file store's folder lock around one write).
    ///
    /// ```swift
    /// let held = try lock.acquireQueued(until: deadline)
    /// defer { held.release() }
    /// ```
    ///
    /// - Throws: as ``acquire(waitingUntil:answeringBy:)``; ``LockQueue/endedWait`` when a
    ///   caller of this process held the queue until `deadline`. Nothing is held then.
    package func acquireQueued(until deadline: Deadline) throws(SecureDictionaryError) -> QueuedLock {
        let queue = try queue(until: deadline)
        guard queue.enter(until: deadline) else { throw queue.endedWait }
        do throws(SecureDictionaryError) {
            return QueuedLock(queue: queue, lock: try acquire(waitingUntil: deadline, answeringBy: deadline) ? self : nil)
        } catch {
            queue.leave()
            throw error
        }
    }
}

/// A lock and its queue, held (``ItemWriterLock/acquireQueued(until:)``).
package struct QueuedLock: Sendable {
    let queue: LockQueue
    /// `nil` when the lock turned out unusable (only the queue is held).
    let lock: (any ItemWriterLock)?

    /// Gives back the lock, then the queue.
    package func release() {
        lock?.release()
        queue.leave()
    }
}

/// What the keyring announced.
package enum KeyringChange: Sendable, Equatable {
    /// Some item was created, changed or deleted.
    case items
    /// Some collection was created, deleted or changed: locked or unlocked, for instance.
    case collections
}

/// Reports, on a thread of its own, what changed in the keyring, until stopped.
package protocol ChangeWatch: Sendable {
    func stop()
}

/// A store that processes share, whose writers coordinate and whose changes can be watched.
package protocol CoordinatedStore: KeyringStore {
    /// The cross-process writer lock of `item`. `logger` gets one warning if the lock
    /// turns out to be unusable.
    func writerLock(for item: KeyringItem, logger: Logger) -> any ItemWriterLock

    /// The lock held beside the writer lock from a check to the write's answer only, never
    /// across a refresh's await: the encrypted-file stores' folder lock, which guards what
    /// their items share (the folder's key, killed writers' temporaries). `nil` (the
    /// default): the writer lock is enough.
    func writeLock(for item: KeyringItem, logger: Logger) -> (any ItemWriterLock)?

    /// Calls `onChange` after any item or collection of the store changed, whoever changed
    /// it; `nil` when changes cannot be watched.
    func watchChanges(_ onChange: @escaping @Sendable (KeyringChange) -> Void) -> (any ChangeWatch)?

    /// Where the store keeps its items: equal for two stores that read and write the same
    /// items (the Secret Service of this session, one folder), `nil` while not known.
    var place: String? { get }
}

extension CoordinatedStore {
    package func writeLock(for item: KeyringItem, logger: Logger) -> (any ItemWriterLock)? { nil }
}
