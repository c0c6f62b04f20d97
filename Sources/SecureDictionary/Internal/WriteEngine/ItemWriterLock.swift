package import Logging

/// Serialises the writers of one item across processes.
///
/// An aid to fairness and efficiency, never to correctness: every writer checks the stored
/// item itself before it writes (see ``ItemState``), so a writer that does not take part
/// (another tool, a process that cannot use the lock) loses nothing except within the one
/// round trip between that check and the write.
package protocol ItemWriterLock: Sendable {
    /// Waits for the lock until `deadline` and then runs `check`, a read of the stored item,
    /// so that what it returns was read holding the lock. A lock may run `check` while its
    /// request is still on the way, where that gives the same guarantee (see
    /// ``BusNameWriterLock``), and runs it again when it does not.
    ///
    /// - Returns: `held` is `true` when the lock is held (pair with ``release()``), `false`
    ///   when it cannot be used at all; the caller then writes without it. `checked` is what
    ///   the last run of `check` returned.
    /// - Throws: ``SecureDictionaryError/lockHeld(pid:command:)`` when another process still
    ///   holds the lock at the deadline, or what `check` throws (the lock is then not held).
    func acquire<T>(
        until deadline: Deadline, thenCheck check: () throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> (held: Bool, checked: T)

    func release()
}

extension ItemWriterLock {
    /// Waits for the lock until `deadline`; `true` when held, `false` when unusable.
    package func acquire(until deadline: Deadline) throws(SecureDictionaryError) -> Bool {
        try acquire(until: deadline) {}.held
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

/// A store that can ask its keyring to show the unlock dialog (``SecretServiceStore``).
protocol InteractivelyUnlockingStore: KeyringStore {
    /// Shows the unlock dialog of `collection` when it is locked and waits for the user up to
    /// `timeout`; returns once it is unlocked.
    ///
    /// - Throws: ``SecureDictionaryError/unlockDismissed`` when the user cancelled,
    ///   ``SecureDictionaryError/locked`` when nobody answered by `timeout`.
    func unlockInteractively(_ collection: KeyringCollection, timeout: Duration) throws(SecureDictionaryError)
}

/// A store that hands its secrets over in ``SecretBytes``, so that a load is copied once, into a
/// ``Generation``'s region, and a write is sent from that region, with no array in between
/// (``SecretServiceStore``; others go through `[UInt8]`, copied and wiped).
package protocol SecretBytesStore: KeyringStore {
    /// As ``KeyringStore/load(_:timeout:)``.
    func loadSecret(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes?
    /// As ``KeyringStore/store(_:for:timeout:)``.
    func storeSecret(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError)
}

/// A store that processes share, whose writers coordinate and whose changes can be watched.
package protocol CoordinatedStore: KeyringStore {
    /// The cross-process writer lock of `item`. `logger` gets one warning if the lock
    /// turns out to be unusable.
    func writerLock(for item: KeyringItem, logger: Logger) -> any ItemWriterLock

    /// Calls `onChange` after any item or collection of the store changed, whoever changed
    /// it; `nil` when changes cannot be watched.
    func watchChanges(_ onChange: @escaping @Sendable (KeyringChange) -> Void) -> (any ChangeWatch)?

    /// Where the store keeps its items: equal for two stores that read and write the same
    /// items (the Secret Service of this session, one folder), `nil` while not known.
    var place: String? { get }
}
