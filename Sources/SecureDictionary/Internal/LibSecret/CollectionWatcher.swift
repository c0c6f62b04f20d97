import CLibSecret
import CSecretShim
import Dispatch
import Synchronization

/// Watches the Secret Service for changed items (the `ItemCreated`, `ItemChanged` and
/// `ItemDeleted` signals of every collection) and calls `onChange` once per burst.
///
/// Why signals: the keyring itself announces every change, whoever made it (another
/// SecureDictionary process, `secret-tool`, a python script), so nothing needs polling and
/// no side channel is trusted. The GLib main loop runs on a thread of its own (in C);
/// `onChange` runs on a private serial queue, at most once per burst of signals, so a slow
/// reload never holds up the signal thread.
final class CollectionWatcher: ChangeWatch, @unchecked Sendable {   // `watcher` is set in init and stopped once under `stopped`
    private final class Callback: Sendable {
        let queue = DispatchQueue(label: "SecureDictionary.changes")
        let scheduled = Atomic<Bool>(false)
        let onChange: @Sendable () -> Void

        init(_ onChange: @escaping @Sendable () -> Void) { self.onChange = onChange }

        /// Runs `onChange` soon, unless a run is already waiting to start.
        func signal() {
            guard !scheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
            queue.async { [self] in
                scheduled.store(false, ordering: .releasing)
                onChange()
            }
        }
    }

    private let callback: Unmanaged<Callback>
    private let watcher: OpaquePointer
    private let stopped = Mutex(false)

    /// Starts watching; `nil` when there is no session bus.
    init?(_ onChange: @escaping @Sendable () -> Void) {
        let callback = Unmanaged.passRetained(Callback(onChange))
        var error: UnsafeMutablePointer<GError>?
        guard let watcher = sd_watcher_start({ context in
            guard let context else { return }
            Unmanaged<Callback>.fromOpaque(context).takeUnretainedValue().signal()
        }, callback.toOpaque(), &error) else {
            g_clear_error(&error)
            callback.release()
            return nil
        }
        self.callback = callback
        self.watcher = watcher
    }

    func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        sd_watcher_stop(watcher)
        // No signal callback runs after sd_watcher_stop; one already queued holds its own reference.
        callback.release()
    }

    deinit { stop() }
}
