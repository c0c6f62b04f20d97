/// The locks of a mutation (``ItemState``'s invariants "the writer lock makes the check safe"
/// and "one deadline per call"): the item's ``LockQueue``, its writer lock, the store's write lock.
extension ItemState {
    /// This process's queue for the item: its writer lock's (one per lock name, whichever
    /// instance or store takes it), or the item's own when the store has no writer lock.
    func queue(until deadline: Deadline) throws(SecureDictionaryError) -> LockQueue {
        try writerLock?.queue(until: deadline) ?? ownQueue
    }

    /// Enters the item's queue, blocking this thread until `deadline` at most.
    ///
    /// - Throws: ``LockQueue/endedWait`` at the deadline.
    func enterQueue(until deadline: Deadline) throws(SecureDictionaryError) -> LockQueue {
        let queue = try queue(until: deadline)
        guard queue.enter(until: deadline) else { throw queue.endedWait }
        return queue
    }

    /// The first half of a mutation: behind `queue` (entered by the caller), takes the writer
    /// lock until `lockDeadline` (the bus may answer until `answerDeadline`), then,
    /// `forTheWrite`, the store's write lock (``HeldWrite`` takes it in its commit), and checks
    /// the stored item by `checkDeadline` (made once they are held). Pair with ``unlock(_:)``;
    /// on a throw nothing is held, the queue neither.
    func lock(
        holding queue: LockQueue, _ context: OperationContext, until lockDeadline: Deadline,
        answeringBy answerDeadline: Deadline, checkingBy checkDeadline: @autoclosure () -> Deadline, forTheWrite: Bool
    ) throws(SecureDictionaryError) -> (held: [QueuedLock], check: Check) {
        var held = [QueuedLock(queue: queue, lock: nil)]
        do throws(SecureDictionaryError) {
            let writer = try writerLock?.acquire(waitingUntil: lockDeadline, answeringBy: answerDeadline) ?? false
            held = [QueuedLock(queue: queue, lock: writer ? writerLock : nil)]
            let checkDeadline = checkDeadline()
            if forTheWrite, let write = try writeLock?.acquireQueued(until: checkDeadline) { held.append(write) }
            return (held, try check(context, checkDeadline))
        } catch {
            unlock(held)
            throw error
        }
    }

    /// Gives back what ``lock(holding:_:until:answeringBy:checkingBy:forTheWrite:)`` took, last first.
    func unlock(_ held: [QueuedLock]) {
        for lock in held.reversed() { lock.release() }
    }
}
