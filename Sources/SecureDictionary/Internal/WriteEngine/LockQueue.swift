import Dispatch
import Glibc
import ProcessSpawning
import Synchronization

/// This process's one queue in front of a lock (a writer lock's bus name or lock file, a file
/// store's folder): every thread and task that takes the lock waits here first.
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
/// - **One holder, one queue per name.** The lock behind it is granted per process (the bus
///   grants a name per connection, `flock` per open file): the queue keeps two threads from
///   both believing they hold it. A mutation, a load and a token refresh of one item all
///   queue here, so a wait never passes a second queue with other rules.
/// - **First come, first served.** ``leave()`` hands the queue to the first waiter, never to
///   whoever grabs it next: a thread writing back to back cannot starve the others.
/// - **Every wait ends by its deadline.** A waiter at its deadline (or, a task, cancelled)
///   leaves at once and is never handed the queue afterwards, so a stuck holder delays no one
///   past their own deadline. A passed deadline (`lockWait: .zero`) takes a free queue and
///   never waits. Blocked threads and suspended tasks queue alike; a waiting task holds no thread.
/// - **The error names who holds it.** A wait that ends while a token refresh of this process
///   holds the queue is ``heldHere`` (naming this process, as a wait for another process's
///   refresh names that one); otherwise ``SecureDictionaryError/timedOut`` (``endedWait``).
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
            let queue = queues[name] ?? LockQueue()
            queues[name] = queue
            return queue
        }
    }

    /// The error of a wait that ended at its deadline: a refresh of this process held the queue.
    package static var heldHere: SecureDictionaryError {
        .lockHeld(pid: Int(getpid()), command: ProcessName.command(of: getpid()))
    }

    /// The error of a wait that ended at its deadline now (see "the error names who holds it").
    package var endedWait: SecureDictionaryError {
        state.withLock { $0.heldForRefresh } ? Self.heldHere : .timedOut
    }

    /// Marks the holder as a token refresh, until it leaves.
    func holdForRefresh() {
        state.withLock { $0.heldForRefresh = true }
    }

    /// How many callers wait now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Waits, blocking this thread, until the queue is this caller's or `deadline` passed;
    /// returns whether it entered.
    package func enter(until deadline: Deadline) -> Bool {
        guard let waiter = arrive(until: deadline) else { return true }
        return (waiter.wait(until: deadline.dispatchTime) ?? giveUp(waiter, .timedOut)) == .entered
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

    /// Takes a free queue (`nil`), or queues a waiter (timed out at once if its deadline passed).
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
