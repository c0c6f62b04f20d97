import Logging
import SecureDictionary
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The cross-process writer lock of one item on the Secret portal path: `flock` on a lock
/// file beside the item's file.
///
/// Why a file here and a bus name for the keyring: every process of a sandboxed app sees
/// the same data folder (it is the app's own), so a lock file there is shared by exactly
/// the processes that can write the item. The check under the lock then makes the
/// read-compare-write of a mutation airtight: unlike the Secret Service, a file has no
/// window between check and write that another process of the app could use.
///
/// Threads of this process queue on an in-process ``FairLock`` first (`flock` locks belong
/// to the open file, not the thread). The holder writes its pid into the file, so a
/// waiter that reaches its deadline can name it (``SecureDictionaryError/lockHeld(pid:command:)``).
/// A lock file that cannot be opened makes the lock unusable, not the write: one warning,
/// and the write goes on, still checked against the stored file.
final class FileWriterLock: ItemWriterLock {
    let path: String
    private let folder: ItemFileFolder
    private let local: FairLock
    private let logger: Logger
    private let warned = Atomic<Bool>(false)
    /// The descriptor that holds the lock, while it is held.
    private let held = Mutex<Int32?>(nil)

    init(item: KeyringItem, in folder: ItemFileFolder, logger: Logger) {
        path = folder.lockPath(of: item)
        self.folder = folder
        self.logger = logger
        local = FairLock.shared(for: path)
    }

    func acquire<T>(
        until deadline: Deadline, thenCheck check: () throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> (held: Bool, checked: T) {
        guard local.lock(until: deadline) else { throw .timedOut }  // a thread of this process holds it
        try? folder.createFolder()  // the first write of all: the folder may not exist yet
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            local.unlock()
            warnUnusable(String(cString: strerror(errno)))
            return (false, try check())
        }
        var pause: UInt32 = 100  // microseconds, doubling up to 2 ms
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let failure = errno
            let busy = failure == EWOULDBLOCK || failure == EINTR
            guard busy, deadline.remaining > .zero else {
                let error = busy ? heldError(descriptor) : nil
                close(descriptor)
                local.unlock()
                if let error { throw error }
                warnUnusable(String(cString: strerror(failure)))
                return (false, try check())
            }
            usleep(pause)
            pause = min(pause * 2, 2_000)
        }
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) == 0 { _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) } }
        held.withLock { $0 = descriptor }
        do throws(SecureDictionaryError) {
            return (true, try check())
        } catch {
            release()
            throw error
        }
    }

    func release() {
        if let descriptor = held.withLock({ held in
            defer { held = nil }
            return held
        }) {
            flock(descriptor, LOCK_UN)
            close(descriptor)
        }
        local.unlock()
    }

    /// The holder named by the pid it wrote, as the error to throw at the deadline.
    private func heldError(_ descriptor: Int32) -> SecureDictionaryError {
        var text = [UInt8](repeating: 0, count: 32)
        let got = text.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        let digits = got > 0 ? String(decoding: text[..<got].prefix { $0 != 10 }, as: UTF8.self) : ""
        guard let pid = Int32(digits), pid > 0 else { return .lockHeld(pid: nil, command: nil) }
        return .lockHeld(pid: Int(pid), command: ProcessName.command(of: pid))
    }

    private func warnUnusable(_ reason: String) {
        if !warned.exchange(true, ordering: .relaxed) {
            logger.warning(
                "the writer lock file is unusable; writing without it (still checked against the stored file)",
                metadata: ["path": "\(path)", "reason": "\(reason)"])
        }
    }
}
