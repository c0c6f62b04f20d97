import Glibc
import ProcessSpawning
import SecureDictionary
import Synchronization

/// The two locks of an encrypted-file store, each an exclusive `flock` taken behind this
/// process's `LockQueue` of the lock's name (`flock` locks belong to the open file, not the
/// thread):
/// - the folder's **write lock** (`itemFile` `nil`): held by a writer of any item from the
///   check of the stored file to its replacement (`CoordinatedStore.writeLock(for:logger:)`);
/// - an item's **writer lock**, on `.<the item file's name>.lock` beside it: held by every
///   writer of the item from its check to its write, and by a token refresh across its network
///   call, so a refresh blocks its item, never its neighbours.
///
/// ```swift
/// let lock = FileStoreLock(folder: folder, itemFile: FileStoreLock.lockFileName(of: item), available: nil)
/// let held = try lock.acquireQueued(until: deadline)   // lockHeld names the holder at the deadline
/// defer { held.release() }
/// ```
///
/// Why the folder for the write lock: a lock file can be removed or replaced while held, and
/// the next writer then locks a new file and writes beside the first (with a lock file per
/// item, 4 writers × 50 lost 123 to 143 of 200 writes with it replaced by a folder, 42 to 89
/// with it deleted every 2 ms). The folder cannot be removed while it holds files, nor swapped
/// by anyone but this user (`FolderSafety`): so this lock is never skipped (where `flock` is
/// unsupported the write fails, ``FileStoreError/fileUnavailable(path:reason:)``), it guards
/// what the items share (the first write's key, the rollback records), and a broken item lock
/// file costs at most a second refresh, never a write.
///
/// Invariants, and why:
/// - **Nothing left behind** (write lock): temporaries (`ItemFileFolder.replace`) are made
///   only under this lock, so every one its next holder finds is a killed writer's, and goes
///   (that exact pattern, regular files of this user only). Test:
///   `FileStoreAdversarialTests.aWriteRemovesTheTemporariesOfKilledWritersAndNothingElse`.
/// - **The file locked is the file named** (writer lock): after the `flock`, a descriptor no
///   longer so named (device and inode) is locked again, so later writers meet on one file.
///   A same-user process deleting it may let two refreshes run, never lose a write (every
///   check and its write hold the write lock too).
/// - **Never removed** (writer lock): removing the lock file of a deleted item would let a
///   writer holding the old file and one holding a new file in at once.
/// - **Nothing before the folder checks**: `available` and `FolderSafety` run before anything
///   is created, as for every write.
/// - **Killed, released**: the lock goes with the holder's descriptors.
final class FileStoreLock: ItemWriterLock {
    private let folder: ItemFileFolder
    /// The item's lock file; `nil` for the folder's write lock.
    private let itemFile: String?
    private let available: (@Sendable () throws(SecureDictionaryError) -> Void)?
    private let ownQueue: LockQueue
    /// The locked descriptor, while the lock is held.
    private let held = Mutex<Int32?>(nil)

    init(folder: ItemFileFolder, itemFile: String?, available: (@Sendable () throws(SecureDictionaryError) -> Void)?) {
        self.folder = folder
        self.itemFile = itemFile
        self.available = available
        ownQueue = LockQueue.shared(for: itemFile.map { "\(folder.path)/\($0)" } ?? folder.path)
    }

    /// An item's lock file name: the item file's, hidden, with `.lock` (no item file,
    /// temporary or listing pattern matches it).
    static func lockFileName(of item: KeyringItem) -> String { ".\(ItemFileFolder.fileName(of: item)).lock" }

    func queue(until deadline: Deadline) -> LockQueue { ownQueue }

    /// A `flock` asks nobody: `deadline` alone bounds the wait.
    func acquire(waitingUntil deadline: Deadline, answeringBy _: Deadline) throws(SecureDictionaryError) -> Bool {
        try available?()
        let locked = if let itemFile { try lockFile(itemFile, until: deadline) } else { try lockFolder(until: deadline) }
        held.withLock { $0 = locked }
        return true
    }

    /// Unlocks and closes the descriptor (the caller then leaves the queue).
    func release() {
        if let descriptor = held.withLock({ held in
            defer { held = nil }
            return held
        }) {
            flock(descriptor, LOCK_UN)
            close(descriptor)
        }
    }

    /// Opens the folder (creating it, checked) and locks it; returns the locked descriptor.
    private func lockFolder(until deadline: Deadline) throws(SecureDictionaryError) -> Int32 {
        let copy = try folder.withFolder(create: true) { descriptor, _ in fcntl(descriptor, F_DUPFD_CLOEXEC, 0) }
        guard let descriptor = copy, descriptor >= 0 else { throw .unusable(folder.path) }
        try Self.exclusive(descriptor, until: deadline, path: folder.path)
        folder.removeTemporaries(in: descriptor)
        return descriptor
    }

    /// Opens (creating) and locks the lock file `name`, until the file locked is the one named.
    private func lockFile(_ name: String, until deadline: Deadline) throws(SecureDictionaryError) -> Int32 {
        let path = "\(folder.path)/\(name)"
        while true {
            let opened = try folder.withFolder(create: true) { directory, _ throws(SecureDictionaryError) -> Int32 in
                let descriptor = openat(directory, name, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
                guard descriptor >= 0 else { throw .unusable(path, ifLink: "the lock file is a symbolic link: remove it") }
                try Self.exclusive(descriptor, until: deadline, path: path)
                guard Self.isNamed(descriptor, name, in: directory) else {
                    close(descriptor)  // removed or replaced meanwhile: lock the file named now
                    return -1
                }
                return descriptor
            }
            guard let descriptor = opened else { throw .fileUnavailable(path: folder.path, reason: "the folder vanished") }
            if descriptor >= 0 { return descriptor }
        }
    }

    /// Whether the open `descriptor` is the regular file `name` of the open `directory`.
    private static func isNamed(_ descriptor: Int32, _ name: String, in directory: Int32) -> Bool {
        var open = stat()
        var named = stat()
        guard fstat(descriptor, &open) == 0, fstatat(directory, name, &named, AT_SYMLINK_NOFOLLOW) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino && named.st_mode & S_IFMT == S_IFREG
    }

    /// Locks `descriptor` exclusively, trying until `deadline` (once when it has passed);
    /// closes it when it throws.
    ///
    /// - Throws: `SecureDictionaryError.lockHeld(pid:command:)` when another holds it at the
    ///   deadline, naming the holder the kernel lists (`LockHolder`);
    ///   ``FileStoreError/fileUnavailable(path:reason:)`` when `flock` is not supported.
    private static func exclusive(_ descriptor: Int32, until deadline: Deadline, path: String) throws(SecureDictionaryError) {
        var pause: UInt32 = 100  // microseconds, doubling up to 2 ms
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let failure = errno
            if failure == EINTR { continue }
            guard failure == EWOULDBLOCK else {
                close(descriptor)
                throw .fileUnavailable(
                    path: path, reason: "cannot lock \(path) (\(String(cString: strerror(failure)))): use a local folder")
            }
            guard deadline.remaining > .zero else {
                let holder = LockHolder.of(descriptor)
                close(descriptor)
                throw .lockHeld(pid: holder.map { Int($0.pid) }, command: holder?.command)
            }
            usleep(pause)
            pause = min(pause * 2, 2_000)
        }
    }
}

/// The process that holds a folder's `flock`, as the kernel tells (`/proc/locks`), for
/// `SecureDictionaryError.lockHeld(pid:command:)`.
///
/// Why not a pid file the holder writes: it names the last writer, not the holder.
/// `/proc/locks` lists each `flock`'s pid, device and inode; that pid must still have the
/// folder open (it may have exited, leaving the lock to a child), else the holder is unknown.
enum LockHolder {
    /// The holder of the `flock` on the open folder `descriptor`, or `nil` when unknown.
    static func of(_ descriptor: Int32) -> (pid: Int32, command: String?)? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        let device = UInt64(status.st_dev)
        let wanted = [
            ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff), (device & 0xff) | ((device >> 12) & ~0xff),
            UInt64(status.st_ino),
        ]
        // "3: FLOCK  ADVISORY  WRITE 473 fe:00:16220702 0 EOF"; waiters have "->" after the number.
        let holder = firstLine(of: "/proc/locks") { fields in
            fields.count >= 6 && fields[1] == "FLOCK" && (Int32(fields[4]) ?? 0) > 0 && numbers(fields[5]) == wanted
        }
        guard let pid = holder.flatMap({ Int32($0[4]) }), stillHolds(pid, device: status.st_dev, inode: status.st_ino)
        else { return nil }
        return (pid, ProcessName.command(of: pid))
    }

    /// The major, minor (hexadecimal) and inode of `fe:00:123`, as numbers: `fe:0:123` is the
    /// same file.
    private static func numbers(_ listed: Substring) -> [UInt64] {
        let parts = listed.split(separator: ":")
        guard parts.count == 3 else { return [] }
        return [UInt64(parts[0], radix: 16), UInt64(parts[1], radix: 16), UInt64(parts[2])].compactMap { $0 }
    }

    /// Whether `pid` runs and has the folder open (or runs as a user whose descriptors this
    /// process may not list, so it cannot be checked).
    private static func stillHolds(_ pid: Int32, device: UInt, inode: UInt) -> Bool {
        guard let listing = opendir("/proc/\(pid)/fd") else { return errno == EACCES }
        defer { closedir(listing) }
        for name in DirectoryEntries.names(in: listing) {
            guard !name.hasPrefix(".") else { continue }
            var status = stat()
            if stat("/proc/\(pid)/fd/\(name)", &status) == 0, status.st_dev == device, status.st_ino == inode { return true }
        }
        return false
    }
}
