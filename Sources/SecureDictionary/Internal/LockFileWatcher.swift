#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Synchronization

/// Watches one lock file with inotify on a thread of its own and calls `onChange` after
/// each write to it, until stopped.
///
/// Why the lock file: every SecureDictionary writer rewrites its stamp there after a
/// keyring write, so a change in another process shows up here within microseconds,
/// without polling D-Bus.
final class LockFileWatcher: Sendable {
    /// A class, so the thread and the watcher share it (an `Atomic` cannot be captured).
    private final class StopFlag: Sendable {
        let raised = Atomic<Bool>(false)
    }

    private let stopped = StopFlag()

    /// Starts watching `path`; returns `nil` when inotify cannot watch it.
    init?(path: String, onChange: @escaping @Sendable () -> Void) {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else { return nil }
        guard inotify_add_watch(descriptor, path, UInt32(IN_MODIFY | IN_CLOSE_WRITE)) >= 0 else {
            close(descriptor)
            return nil
        }
        let thread = Thread { [stopped] in
            defer { close(descriptor) }
            var buffer = [UInt8](repeating: 0, count: 4_096)
            while !stopped.raised.load(ordering: .acquiring) {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                // A bounded wait, so that stop() takes effect within a quarter second.
                guard poll(&poller, 1, 250) > 0 else { continue }
                var sawEvent = false
                while buffer.withUnsafeMutableBytes({ read(descriptor, $0.baseAddress, $0.count) }) > 0 {
                    sawEvent = true   // drain: one reload covers any number of events
                }
                if sawEvent && !stopped.raised.load(ordering: .acquiring) { onChange() }
            }
        }
        thread.name = "SecureDictionary.watcher"
        thread.start()
    }

    func stop() {
        stopped.raised.store(true, ordering: .releasing)
    }

    deinit { stop() }
}
