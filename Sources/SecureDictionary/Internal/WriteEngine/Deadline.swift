package import Dispatch
import ProcessSpawning

/// The moment by which one public call must return, waits for other threads, other
/// processes and each keyring call included.
///
/// ```swift
/// let deadline = Deadline(after: options.timeout)
/// guard queue.enter(until: deadline) else { throw queue.endedWait }
/// let bytes = try store.load(item, timeout: try deadline.remainingForCall())
/// ```
package struct Deadline: Sendable {
    package let instant: ContinuousClock.Instant

    package init(after timeout: Duration) {
        instant = ContinuousClock.now.advanced(by: timeout)
    }

    /// The time left (zero once passed).
    package var remaining: Duration { max(instant - ContinuousClock.now, .zero) }

    /// The same moment on the dispatch clock.
    package var dispatchTime: DispatchTime { remaining.fromNow }

    /// The time left for one more keyring call.
    ///
    /// - Throws: ``SecureDictionaryError/timedOut`` when none is left: the call is not made,
    ///   so a write that stops here has certainly not happened.
    package func remainingForCall() throws(SecureDictionaryError) -> Duration {
        let left = remaining
        if left <= .zero { throw .timedOut }
        return left
    }
}
