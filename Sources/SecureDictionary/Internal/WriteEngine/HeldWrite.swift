import Synchronization

/// A mutation whose two halves are apart: the item's queue and locks taken and the stored
/// item checked (``init(_:_:holding:until:)``), the caller's work (a token refresh that
/// awaits its server), then the write (``commit(_:)``), all held all along. A token refresh
/// is this and the item's ``LockQueue``, nothing else.
///
/// ```swift
/// let deadline = Deadline(after: .seconds(30))
/// let held = try HeldWrite(state, context, holding: try state.enterQueue(until: deadline), until: deadline)
/// defer { held.release() }
/// var entries = held.entries
/// entries["accessToken"] = .string(try fetchNewToken(entries["refreshToken"]))
/// try held.commit(entries)
/// ```
///
/// Invariants, and why:
/// - **Checked before the write, again.** ``commit(_:)`` reads the stored item once more and
///   applies the changes onto it (``ItemState``): a tool that does not take the writer lock
///   may have written during the caller's work. Test: `anOutsideWriteDuringTheRefreshIsKept`.
/// - **Released exactly once, whatever happens.** ``release()`` may be called any number of
///   times from any thread, and the last reference going releases too, so an async caller
///   cancelled while the locks were taken for it (its result dropped) frees them. Test:
///   `aCallerCancelledWhileTakingTheLocksLeavesThemFree`.
/// - **Separate bounds.** The wait for the locks ends at a deadline of its own (another
///   caller's refresh may take seconds); the check and the write each get the options' timeout.
final class HeldWrite: Sendable {
    /// The stored entries, as checked once the locks were held.
    let entries: SecureDictionary.Entries
    private let state: ItemState
    private let context: OperationContext
    private let locks: [QueuedLock]
    private let waited: Duration
    private let held = Atomic<Bool>(true)

    /// Takes `state`'s locks behind `queue` (entered by the caller) until `lockDeadline`, and
    /// checks the stored item. The queue is this write's from here on: ``release()`` leaves it,
    /// and a wait for it that ends names this process.
    ///
    /// - Throws: ``SecureDictionaryError/lockHeld(pid:command:)`` when another process held
    ///   the writer lock all along; ``SecureDictionaryError/timedOut`` when the keyring did
    ///   not answer; the check's errors. Nothing is held then, the queue neither.
    init(_ state: ItemState, _ context: OperationContext, holding queue: LockQueue, until lockDeadline: Deadline)
        throws(SecureDictionaryError)
    {
        let started = ContinuousClock.now
        // Asking the bus is a keyring call: it gets the options' timeout even when the wait ends sooner.
        let (locked, check) = try state.lock(
            holding: queue, context, until: lockDeadline, answeringBy: Deadline(after: context.timeout),
            checkingBy: Deadline(after: context.timeout), forTheWrite: false)
        self.state = state
        self.context = context
        locks = locked
        queue.holdForRefresh()
        waited = check.started - started
        entries = SecureDictionary.Entries(stored: check.generation)
    }

    deinit { release() }

    /// Writes `changed`'s changes onto what is stored now (checked again), keeping the locks;
    /// returns the generation stored.
    ///
    /// - Throws: the check's and the write's errors; nothing was written, or (timed out,
    ///   connection lost) the outcome is unknown and the next read reloads.
    func commit(_ changed: SecureDictionary.Entries) throws(SecureDictionaryError) -> Generation {
        precondition(held.load(ordering: .acquiring), "\(state.item.name): a HeldWrite was committed after its release")
        let deadline = Deadline(after: context.timeout)
        // The store's write lock only now: held across the caller's await, it would stop every other item's writers.
        let writing = try state.writeLock?.acquireQueued(until: deadline)
        defer { writing?.release() }
        let check = try state.check(context, deadline)
        return try state.write(changed.overlay, onto: check, context, deadline, waited: waited)
    }

    /// Gives the locks and the queue back (the first call does).
    func release() {
        guard held.exchange(false, ordering: .acquiringAndReleasing) else { return }
        state.unlock(locks)
    }
}
