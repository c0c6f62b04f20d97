package import Dispatch
import Synchronization

/// A value given once, waited for by threads (until a deadline or for good) and by tasks
/// (suspended): the one-shot wait of a result that comes from another thread, a child's
/// exit, a lock handed over.
///
/// ```swift
/// let answer = OneShot<Int>()
/// DispatchQueue.global().async { answer.finish(42) }
/// guard let value = answer.wait(for: .seconds(1)) else { throw Timeout() }
/// ```
///
/// Why the first ``finish(_:)`` wins and says so: two outcomes often race (a result and a
/// deadline, a result and a cancellation, a waiter served and a waiter giving up), and the
/// one whose `finish` returned `true` is the one that happened. Waiting never consumes the
/// value, so every wait after it arrived returns it at once. `Value` must not be optional.
package final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var suspended: [CheckedContinuation<Value, Never>] = []
    }

    private let state = Mutex(State())
    /// Signalled once the value is set; each blocked waiter passes the signal on.
    private let arrived = DispatchSemaphore(value: 0)

    package init() {}

    /// Sets the value unless one was set; returns whether this call set it.
    @discardableResult
    package func finish(_ value: Value) -> Bool {
        let suspended: [CheckedContinuation<Value, Never>]? = state.withLock { state in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.suspended = [] }
            return state.suspended
        }
        guard let suspended else { return false }
        arrived.signal()
        for continuation in suspended { continuation.resume(returning: value) }
        return true
    }

    /// The value, if it was set.
    package var value: Value? { state.withLock { $0.value } }

    /// Blocks this thread until the value is set or `deadline` passed; the value, or `nil`.
    package func wait(until deadline: DispatchTime) -> Value? {
        guard arrived.wait(timeout: deadline) == .success else { return value }
        arrived.signal()
        return value
    }

    /// Blocks this thread until the value is set or `timeout` passed; the value, or `nil`.
    package func wait(for timeout: Duration) -> Value? { wait(until: timeout.fromNow) }

    /// Blocks this thread until the value is set.
    package func wait() -> Value {
        arrived.wait()
        arrived.signal()
        guard let value else { preconditionFailure("a OneShot signalled without a value") }
        return value
    }

    /// Suspends the task until the value is set.
    package func arrival() async -> Value {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
            let present: Value? = state.withLock { state in
                if let value = state.value { return value }
                state.suspended.append(continuation)
                return nil
            }
            if let present { continuation.resume(returning: present) }
        }
    }
}
