import Logging

/// Serialises the writers of one item across processes.
///
/// An aid to fairness and efficiency, never to correctness: every writer checks the stored
/// item itself before it writes (see ``ItemState``), so a writer that does not take part
/// (another tool, a process that cannot use the lock) loses nothing except within the one
/// round trip between that check and the write.
protocol ItemWriterLock: Sendable {
    /// Waits for the lock until `deadline`.
    ///
    /// - Returns: `true` when the lock is held (pair with ``release()``), `false` when it cannot
    ///   be used at all; the caller then writes without it.
    /// - Throws: ``SecureDictionaryError/lockHeld(pid:command:)`` when another process still
    ///   holds the lock at the deadline.
    func acquire(until deadline: Deadline) throws(SecureDictionaryError) -> Bool

    func release()
}

/// What the keyring announced.
enum KeyringChange: Sendable, Equatable {
    /// Some item was created, changed or deleted.
    case items
    /// Some collection was created, deleted or changed: locked or unlocked, for instance.
    case collections
}

/// Reports, on a thread of its own, what changed in the keyring, until stopped.
protocol ChangeWatch: Sendable {
    func stop()
}

/// A store that processes share, whose writers coordinate and whose changes can be watched.
protocol CoordinatedStore: KeyringStore {
    /// The cross-process writer lock of `item`. `logger` gets one warning if the lock
    /// turns out to be unusable.
    func writerLock(for item: KeyringItem, logger: Logger) -> any ItemWriterLock

    /// Calls `onChange` after any item or collection of the store changed, whoever changed
    /// it; `nil` when changes cannot be watched.
    func watchChanges(_ onChange: @escaping @Sendable (KeyringChange) -> Void) -> (any ChangeWatch)?
}
