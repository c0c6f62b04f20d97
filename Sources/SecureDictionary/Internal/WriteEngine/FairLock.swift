import Dispatch
import Synchronization

/// A mutual-exclusion lock whose waiters give up at a deadline and are served roughly in
/// arrival order.
///
/// Why a semaphore and not `Mutex`: `Mutex` can neither time out nor hand over. A
/// `DispatchSemaphore` of value 1 hands a release to one waiting thread, so a thread that
/// writes back to back cannot starve the others, and `wait(timeout:)` bounds the wait, so a
/// call stuck behind a frozen keyring never makes the threads queued behind it wait longer
/// than their own deadline.
package final class FairLock: Sendable {
    package init() {}

    private let semaphore = DispatchSemaphore(value: 1)

    /// Takes the lock, waiting until `deadline` at most. Returns whether it was taken.
    package func lock(until deadline: Deadline) -> Bool {
        let (seconds, attoseconds) = deadline.remaining.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
        return semaphore.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds))) == .success
    }

    package func unlock() {
        semaphore.signal()
    }
}

extension FairLock {
    private static let named = Mutex<[String: FairLock]>([:])

    /// The one lock of this process for `name` (a writer lock's bus name or lock file), so
    /// that every instance locking the same thing queues on the same lock.
    package static func shared(for name: String) -> FairLock {
        named.withLock { locks in
            if let lock = locks[name] { return lock }
            let lock = FairLock()
            locks[name] = lock
            return lock
        }
    }
}
