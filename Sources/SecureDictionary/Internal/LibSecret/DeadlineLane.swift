import Dispatch
import ProcessSpawning
import Synchronization

/// Runs blocking calls one at a time on a private serial queue and stops waiting for them
/// at a deadline.
///
/// Why a lane: libsecret's `*_sync` calls have no deadline (a frozen daemon blocks for 25–50 s,
/// an unanswered prompt forever, and cancelling does not always help). At the deadline the
/// call is interrupted, given a short grace, then abandoned: later calls get a fresh queue and
/// context (connection). Why serial: concurrent first calls each negotiate their own session.
final class DeadlineLane<Context: AnyObject & Sendable>: Sendable {
    private struct Generation: Sendable {
        let queue: DispatchQueue
        let context: Context
    }

    private let label: String
    private let makeContext: @Sendable () -> Context
    private let current: Mutex<Generation>
    /// How long an interrupted call may take to notice before it is abandoned.
    private let grace = Duration.milliseconds(250)

    init(label: String, makeContext: @escaping @Sendable () -> Context) {
        self.label = label
        self.makeContext = makeContext
        self.current = Mutex(Generation(queue: DispatchQueue(label: label), context: makeContext()))
    }

    /// Runs `body` on the lane and returns its result, or `nil` when `timeout` passed first:
    /// then `interrupt` is called (from the waiting thread), and the lane renewed.
    func run<T: Sendable>(
        timeout: Duration,
        interrupt: @escaping @Sendable () -> Void,
        _ body: @escaping @Sendable (Context) -> T
    ) -> T? {
        let generation = current.withLock { $0 }
        let outcome = OneShot<Result<T, Never>>()  // a result, since T may be optional
        generation.queue.async {
            outcome.finish(.success(body(generation.context)))
        }
        if case .success(let value) = outcome.wait(for: timeout) { return value }
        interrupt()
        _ = outcome.wait(for: grace)
        // The next call starts a new generation, unless one already did.
        current.withLock { now in
            if now.queue === generation.queue {
                now = Generation(queue: DispatchQueue(label: label), context: makeContext())
            }
        }
        return nil
    }
}
