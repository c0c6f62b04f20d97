import Glibc
import SecureDictionary
import Synchronization

/// Tells, on a thread of its own, that an item file of one folder was written, replaced or
/// removed, by anyone: what ``SecureDictionary/changes()`` rests on for the encrypted-file
/// stores (the store says "something changed"; the dictionary reads its item and compares).
///
/// Why inotify on the folder: writers rename a temporary over an item file, which a watch on
/// the file would follow away; the folder's watch sees that (`IN_MOVED_TO`), a removal and a
/// write in place. Any file wakes every watcher of the folder (names are hashes); the reload
/// reads one file and decodes it only when it differs.
///
/// Invariants, and why:
/// - **A folder that does not exist yet is waited for**: the nearest folder above it is
///   watched until then, so a dictionary observed before its first write hears that write.
///   Test: `StoreContract.aChangeByAnotherProcessReachesChanges`.
/// - **Once per batch**: `onChange` runs once for the events read together, on the watcher's
///   thread; events that come while it runs make one more run.
/// - **Stopped from anywhere**: ``stop()`` only wakes the thread, which closes its
///   descriptors itself, so `onChange` may call it (the last dictionary going).
final class FolderWatcher: ChangeWatch, Sendable {
    private let loop: Loop

    /// Starts watching `folder`; `nil` when inotify is not available.
    init?(folder: String, _ onChange: @escaping @Sendable () -> Void) {
        let events = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard events >= 0 else { return nil }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            close(events)
            return nil
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        loop = Loop(folder: folder, events: events, stopSignal: ends[0], wake: ends[1], onChange: onChange)
        var thread = pthread_t()
        let started = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Loop>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, Unmanaged.passRetained(loop).toOpaque())
        guard started == 0 else {
            close(events)
            close(ends[0])
            close(ends[1])
            return nil
        }
        pthread_detach(thread)
    }

    func stop() {
        loop.wake.withLock { end in
            guard end >= 0 else { return }
            var byte: UInt8 = 1
            _ = write(end, &byte, 1)
        }
    }

    /// The watching thread's state.
    private final class Loop: @unchecked Sendable {  // its `var`s are the watching thread's alone
        let folder: String
        let events: Int32
        let stopSignal: Int32
        /// The write end of the pipe that wakes the thread to stop; `-1` once the thread closed it.
        let wake: Mutex<Int32>
        let onChange: @Sendable () -> Void
        /// The watch, and whether it is on the folder itself (else on a folder above it).
        var watch: Int32 = -1
        var watchesTheFolder = false

        init(folder: String, events: Int32, stopSignal: Int32, wake: Int32, onChange: @escaping @Sendable () -> Void) {
            self.folder = ItemFileFolder(path: folder).path
            self.events = events
            self.stopSignal = stopSignal
            self.wake = Mutex(wake)
            self.onChange = onChange
        }

        func run() {
            defer {
                close(events)
                close(stopSignal)
                wake.withLock { end in
                    close(end)
                    end = -1
                }
            }
            watchNearest()
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                var waiting = [
                    pollfd(fd: events, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: stopSignal, events: Int16(POLLIN), revents: 0),
                ]
                let ready = poll(&waiting, 2, -1)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0, waiting[1].revents == 0 else { return }
                var changed = false
                var moved = false
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(events, $0.baseAddress!, $0.count) }
                    guard count > 0 else { break }
                    buffer.withUnsafeBytes { bytes in
                        var offset = 0
                        while offset + MemoryLayout<inotify_event>.size <= count {
                            let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                            let nameStart = offset + MemoryLayout<inotify_event>.size
                            let name = String(  // NUL-padded
                                decoding: bytes[nameStart..<min(count, nameStart + Int(event.len))].prefix { $0 != 0 },
                                as: UTF8.self)
                            offset = nameStart + Int(event.len)
                            guard event.wd == watch else { continue }  // a watch given up (its IN_IGNORED)
                            if event.mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                                moved = true
                                changed = true
                            } else if watchesTheFolder {
                                if name.hasSuffix(".sdict") && !name.hasPrefix(".") { changed = true }
                            } else {
                                moved = true  // something appeared above the folder: maybe on its way
                            }
                        }
                    }
                }
                if moved && watchNearest() { changed = true }
                if changed { onChange() }
            }
        }

        /// Watches the folder, or the nearest folder above it that exists; returns whether the
        /// folder itself is watched now and was not before (files may have come meanwhile).
        @discardableResult
        func watchNearest() -> Bool {
            let (before, previous) = (watchesTheFolder, watch)
            var path = folder
            var isFolder = true
            var added: Int32 = -1
            while true {
                let mask: UInt32 =
                    isFolder
                    ? UInt32(
                        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
                    : UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
                added = inotify_add_watch(events, path, mask)  // the same folder again: the same watch
                if added >= 0 || path == "/" || path == "." { break }
                path = parentFolder(of: path)
                isFolder = false
            }
            if previous >= 0 && previous != added { inotify_rm_watch(events, previous) }
            watch = added
            watchesTheFolder = added >= 0 && isFolder
            return watchesTheFolder && !before
        }
    }
}
