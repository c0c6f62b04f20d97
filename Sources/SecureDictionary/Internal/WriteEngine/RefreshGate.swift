import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One refresh at a time per item in this process (``SecureDictionary/value(forKey:lockWait:refreshingIf:refresh:)``):
/// the callers queue here in arrival order before the item's locks, until a deadline.
///
/// ```swift
/// guard try await state.refreshGate.enter(until: deadline) else { throw RefreshGate.heldHere }
/// defer { state.refreshGate.leave() }
/// ```
///
/// Why a gate of its own and not `serial` alone: a refresh holds the item's locks across the
/// caller's network call, seconds perhaps, and an async caller must not block a thread while
/// it waits that long (neither one of Swift's cooperative pool, nor one of the private queue
/// the async calls share). Async callers suspend here, holding no thread; only the caller
/// that passed the gate waits for the locks, on the private queue, and those locks are free
/// unless another process or a plain write holds them. Sync callers queue here too, on their
/// own thread, so that a wait for a refresh of this process ends with the same error.
final class RefreshGate: Sendable {
    /// The error of a wait that ended at its deadline: a refresh of this process held the gate.
    static var heldHere: SecureDictionaryError {
        .lockHeld(pid: Int(getpid()), command: ProcessName.command(of: getpid()))
    }

    /// How a wait ended.
    enum Outcome: Sendable {
        case entered, timedOut, cancelled
    }

    private struct Waiter {
        let id: UInt64
        let resume: @Sendable (Outcome) -> Void
    }

    private struct State {
        var held = false
        var queue: [Waiter] = []
        var nextID: UInt64 = 0
        /// Async waiters numbered but not queued yet, and those of them that gave up meanwhile.
        var arriving: Set<UInt64> = []
        var abandoned: Set<UInt64> = []
    }

    private let state = Mutex(State())

    /// Waits, suspended, for the gate until `deadline` or the task's cancellation.
    func enter(until deadline: Deadline) async -> Outcome {
        let id: UInt64? = state.withLock { state in
            guard state.held else {
                state.held = true
                return nil
            }
            state.nextID += 1
            state.arriving.insert(state.nextID)
            return state.nextID
        }
        guard let id else { return .entered }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let gaveUp: Bool = state.withLock { state in
                    state.arriving.remove(id)
                    if state.abandoned.remove(id) != nil { return true }
                    state.queue.append(Waiter(id: id, resume: { continuation.resume(returning: $0) }))
                    return false
                }
                if gaveUp { return continuation.resume(returning: .cancelled) }
                DispatchQueue.global().asyncAfter(deadline: deadline.dispatchTime) { self.giveUp(id, .timedOut) }
            }
        } onCancel: {
            giveUp(id, .cancelled)
        }
    }

    /// Waits, blocking this thread, for the gate until `deadline`; returns whether it entered.
    func enterWaiting(until deadline: Deadline) -> Bool {
        let granted = DispatchSemaphore(value: 0)
        let id: UInt64? = state.withLock { state in
            guard state.held else {
                state.held = true
                return nil
            }
            state.nextID += 1
            state.queue.append(Waiter(id: state.nextID, resume: { _ in granted.signal() }))
            return state.nextID
        }
        guard let id else { return true }
        if granted.wait(timeout: deadline.dispatchTime) == .success { return true }
        guard leaveQueue(id) == nil else { return false }
        granted.wait()  // served as the wait ended: the gate is ours, and the signal is on its way
        return true
    }

    /// How many callers wait in the queue now.
    var waiting: Int { state.withLock { $0.queue.count } }

    /// Lets the next waiter in, or opens the gate.
    func leave() {
        let next: Waiter? = state.withLock { state in
            guard !state.queue.isEmpty else {
                state.held = false
                return nil
            }
            return state.queue.removeFirst()
        }
        next?.resume(.entered)
    }

    /// Ends the wait of `id` with `outcome` if it still waits; marks it abandoned if it has not
    /// queued yet; does nothing once it was let in.
    private func giveUp(_ id: UInt64, _ outcome: Outcome) {
        if let waiter = leaveQueue(id) { waiter.resume(outcome) }
    }

    /// Takes `id` out of the queue (its waiter), or marks an arriving `id` abandoned (`nil`).
    private func leaveQueue(_ id: UInt64) -> Waiter? {
        state.withLock { state in
            if let index = state.queue.firstIndex(where: { $0.id == id }) { return state.queue.remove(at: index) }
            if state.arriving.remove(id) != nil { state.abandoned.insert(id) }
            return nil
        }
    }
}

extension Deadline {
    /// The same moment on the dispatch clock.
    var dispatchTime: DispatchTime {
        let (seconds, attoseconds) = remaining.components
        return .now() + .nanoseconds(Int(clamping: max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000))
    }
}
