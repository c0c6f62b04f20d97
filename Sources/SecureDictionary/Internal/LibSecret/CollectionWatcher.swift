import CLibSecret
import CSecretShim
import Dispatch
import Synchronization

/// Watches the Secret Service for changed items (the `ItemCreated`, `ItemChanged` and
/// `ItemDeleted` signals of every collection) and changed collections (`CollectionChanged`
/// and friends, which locking and unlocking send), and calls `onChange` once per burst of
/// each kind.
///
/// Why signals: the keyring itself announces every change, whoever made it (another
/// SecureDictionary process, `secret-tool`, a python script), so nothing needs polling and
/// no side channel is trusted. The GLib main loop runs on a thread of its own (in C);
/// `onChange` runs on a private serial queue, at most once per burst of signals, so a slow
/// reload never holds up the signal thread, and once more 2.5 s after the last burst of
/// item signals (a write KeePassXC takes while saving its database sends no signal).
final class CollectionWatcher: ChangeWatch, @unchecked Sendable {  // `watcher` is set in init and stopped once under `stopped`
    private final class Callback: Sendable {
        let queue = DispatchQueue(label: "SecureDictionary.changes")
        /// Bit 0: a run for items is waiting to start; bit 1: one for collections.
        let scheduled = Atomic<UInt8>(0)
        let onChange: @Sendable (KeyringChange) -> Void

        init(_ onChange: @escaping @Sendable (KeyringChange) -> Void) { self.onChange = onChange }

        /// Bursts of item signals so far; a trailing look runs only for the latest one.
        let bursts = Atomic<UInt64>(0)
        /// How long after a burst of item signals to look once more. KeePassXC (2.7.4 and
        /// later) saves its database 150 ms after a change, and a write it receives while that
        /// save runs (its key derivation alone takes the database's "decryption time", 1 s by
        /// default) changes the item without any `ItemChanged` signal.
        static let trailingLook = DispatchTimeInterval.milliseconds(2500)

        /// Runs `onChange(change)` soon, unless a run for that kind is already waiting to start.
        func signal(_ change: KeyringChange) {
            let bit: UInt8 = change == .items ? 1 : 2
            guard scheduled.bitwiseOr(bit, ordering: .acquiringAndReleasing).oldValue & bit == 0 else { return }
            queue.async { [self] in
                scheduled.bitwiseAnd(~bit, ordering: .acquiringAndReleasing)
                onChange(change)
                guard change == .items else { return }
                let burst = bursts.add(1, ordering: .relaxed).newValue
                queue.asyncAfter(deadline: .now() + Self.trailingLook) { [self] in
                    if bursts.load(ordering: .relaxed) == burst { onChange(.items) }
                }
            }
        }
    }

    private let callback: Unmanaged<Callback>
    private let watcher: OpaquePointer
    private let stopped = Atomic(false)

    /// Starts watching; `nil` when there is no session bus.
    init?(_ onChange: @escaping @Sendable (KeyringChange) -> Void) {
        let callback = Unmanaged.passRetained(Callback(onChange))
        var error: UnsafeMutablePointer<GError>?
        guard
            let watcher = sd_watcher_start(
                { kind, context in
                    guard let context else { return }
                    let change: KeyringChange = kind == Int32(SD_CHANGE_ITEMS) ? .items : .collections
                    Unmanaged<Callback>.fromOpaque(context).takeUnretainedValue().signal(change)
                }, callback.toOpaque(), &error)
        else {
            g_clear_error(&error)
            callback.release()
            return nil
        }
        self.callback = callback
        self.watcher = watcher
    }

    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        sd_watcher_stop(watcher)
        // No signal callback runs after sd_watcher_stop; one already queued holds its own reference.
        callback.release()
    }

    deinit { stop() }
}
