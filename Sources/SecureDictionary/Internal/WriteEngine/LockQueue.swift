import Dispatch
import ProcessSpawning
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// This process's one queue in front of a lock: every thread and task of the process that
/// takes the lock named `name` (a writer lock's bus name or lock file, a file store's
/// folder) waits here first, and only the one that holds the queue takes the lock itself.
///
/// ```swift
/// let queue = LockQueue.shared(for: busName)
/// guard queue.enter(until: deadline) else { throw queue.endedWait }     // a blocked thread
/// defer { queue.leave() }
///
/// switch await queue.enter(until: deadline) { … }                        // a suspended task
/// ```
///
/// Invariants, and why:
/// - **One holder, one queue per name.** At most one caller holds the queue; ``leave()``
///   hands it to the first waiter, or opens it. The lock behind it is granted per process
///   (the bus grants a name per connection, `flock` per open file), so this queue is what
///   keeps two threads of one process from both believing they hold it; and a mutation, a
///   load and a token refresh of one item all queue here, so a wait never passes a second
///   queue with other rules.
/// - **First come, first served.** The queue is handed over, never released for whoever
///   grabs it next: a thread that writes back to back cannot starve the others, and a
///   caller waits at most for those who came before it, each bounded by its own deadline.
/// - **Every wait ends by its deadline.** A waiter that reaches its deadline (or, a task,
///   its cancellation) leaves the queue at once and is never handed it afterwards: one
///   stuck holder never makes the callers behind it wait longer than their own deadline. A
///   deadline already passed (`lockWait: .zero`) takes a free queue and never waits.
///   Blocked threads and suspended tasks queue alike; a task holds no thread while it waits.
/// - **The error names who holds it.** A wait that ends at its deadline while a token
///   refresh of this process holds the queue is ``heldHere``
///   (``SecureDictionaryError/lockHeld(pid:command:)`` naming this process), as a wait for
///   another process's refresh names that one; otherwise it is
///   ``SecureDictionaryError/timedOut`` (``endedWait``).
package final class LockQueue: Sendable {
    /// How a wait ended.
    package enum Outcome: Sendable {
        case entered, timedOut, cancelled
    }

    private struct State {
        var held = false
        /// Whether the holder is a token refresh (``HeldWrite``), for ``endedWait``.
        var heldForRefresh = false
        /// The waiters in arrival order; each is taken out as it is served or gives up.
        var waiters: [OneShot<Outcome>] = []
    }

    private let state = Mutex(State())

    package init() {}

    private static let named = Mutex<[String: LockQueue]>([:])

    /// The one queue of this process for the lock `name`.
    package static func shared(for name: String) -> LockQueue {
        named.withLock { queues in
            if let queue = queues[name] { return queue }
            let queue = LockQueue()
            queues[name] = queue
            return queue
        }
    }

    /// The error of a wait that ended at its deadline: a refresh of this process held the queue.
    package static var heldHere: SecureDictionaryError {
        .lockHeld(pid: Int(getpid()), command: ProcessName.command(of: getpid()))
    }

    /// The error of a wait that ended at its deadline now: ``heldHere`` while a token refresh
    /// of this process holds the queue, else ``SecureDictionaryError/timedOut``.
    package var endedWait: SecureDictionaryError {
        state.withLock { $0.heldForRefresh } ? Self.heldHere : .timedOut
    }

    /// Marks the holder as a token refresh (or no longer one).
    func holdForRefresh(_ refreshing: Bool) {
        state.withLock { $0.heldForRefresh = refreshing }
    }

    /// How many callers wait now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Waits, blocking this thread, until the queue is this caller's or `deadline` passed;
    /// returns whether it entered.
    package func enter(until deadline: Deadline) -> Bool {
        guard let waiter = arrive(until: deadline) else { return true }
        guard let ended = waiter.wait(until: deadline.dispatchTime) else { return giveUp(waiter, .timedOut) == .entered }
        return ended == .entered
    }

    /// Waits, suspended, until the queue is this caller's, `deadline` passed or the task was
    /// cancelled.
    func enter(until deadline: Deadline) async -> Outcome {
        guard let waiter = arrive(until: deadline) else { return .entered }
        DispatchQueue.global().asyncAfter(deadline: deadline.dispatchTime) { _ = self.giveUp(waiter, .timedOut) }
        return await withTaskCancellationHandler {
            await waiter.arrival()
        } onCancel: {
            _ = giveUp(waiter, .cancelled)
        }
    }

    /// Hands the queue to the first waiter, or opens it.
    package func leave() {
        state.withLock { state in
            state.heldForRefresh = false
            if state.waiters.isEmpty {
                state.held = false
            } else {
                state.waiters.removeFirst().finish(.entered)
            }
        }
    }

    /// Takes a free queue (`nil`), or queues a waiter; a waiter whose deadline passed
    /// already ends at once, timed out.
    private func arrive(until deadline: Deadline) -> OneShot<Outcome>? {
        state.withLock { state in
            guard state.held else {
                state.held = true
                return nil
            }
            let waiter = OneShot<Outcome>()
            if deadline.remaining > .zero { state.waiters.append(waiter) } else { waiter.finish(.timedOut) }
            return waiter
        }
    }

    /// Ends `waiter`'s wait with `outcome` unless it was served first; returns how it ended.
    private func giveUp(_ waiter: OneShot<Outcome>, _ outcome: Outcome) -> Outcome {
        state.withLock { state in
            if waiter.finish(outcome) { state.waiters.removeAll { $0 === waiter } }
        }
        return waiter.wait()
    }
}
