import Synchronization

/// The locks of a mutation (see ``ItemState``'s invariants "the writer lock makes the check
/// safe" and "one deadline per call"): `serial`, the item's writer lock, and the store's
/// write lock from the check to the write.
extension ItemState {
    /// Which of the item's locks are held, besides `serial`.
    struct HeldLocks {
        var writer = false
        var write = false
    }

    /// Takes `serial`, then the writer lock when the store has one, waiting for them until
    /// `lockDeadline` (the bus may answer until `answerDeadline`), then, `forTheWrite`, the
    /// store's write lock, and checks the stored item under them by `checkDeadline` (made
    /// once they are held): the first half of a mutation (``HeldWrite`` holds the item's
    /// locks across a caller's await, and takes the write lock in its commit). Pair with
    /// ``unlock(_:)``; on a throw nothing is held.
    func lock(
        _ context: OperationContext, until lockDeadline: Deadline, answeringBy answerDeadline: Deadline,
        checkingBy checkDeadline: @autoclosure () -> Deadline, forTheWrite: Bool
    ) throws(SecureDictionaryError) -> (held: HeldLocks, check: Check) {
        guard serial.lock(until: lockDeadline) else {
            throw refreshHolds.load(ordering: .relaxed) ? RefreshGate.heldHere : .timedOut
        }
        var held = HeldLocks()
        do throws(SecureDictionaryError) {
            held.writer = try writerLock?.acquire(waitingUntil: lockDeadline, answeringBy: answerDeadline) ?? false
            let checkDeadline = checkDeadline()
            if forTheWrite { held.write = try takeWriteLock(until: checkDeadline) }
            return (held, try check(context, checkDeadline))
        } catch {
            unlock(held)
            throw error
        }
    }

    /// Takes the store's write lock (a ``HeldWrite``'s commit), when it has one.
    func takeWriteLock(until deadline: Deadline) throws(SecureDictionaryError) -> Bool {
        try writeLock?.acquire(until: deadline) ?? false
    }

    /// Gives back the write lock a ``takeWriteLock(until:)`` took.
    func releaseWriteLock(_ held: Bool) {
        if held { writeLock?.release() }
    }

    /// Gives back what ``lock(_:until:answeringBy:checkingBy:forTheWrite:)`` took: the write
    /// lock, the writer lock, then `serial`.
    func unlock(_ held: HeldLocks) {
        releaseWriteLock(held.write)
        if held.writer { writerLock?.release() }
        serial.unlock()
    }
}
