import CLibSecret
import CSecretShim
import Dispatch
import Synchronization

/// Calls `onChange` once per burst of the Secret Service's signals of changed items or
/// collections (`sd_watcher_start`).
///
/// Why signals: the keyring announces every change, whoever made it (another process,
/// `secret-tool`, a script), so nothing polls and no side channel is trusted. `onChange` runs
/// on a private serial queue, so a slow reload never holds up the signal thread, and once more
/// 2.5 s after the last burst of item signals (``Callback/trailingLook``).
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
