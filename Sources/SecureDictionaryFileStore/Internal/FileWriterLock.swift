import Logging
import SecureDictionary
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The write lock of an encrypted-file store: `flock` on the store's folder itself, held by
/// a writer of any of its items from the check of the stored file to its replacement
/// (milliseconds; `CoordinatedStore.writeLock(for:logger:)`), never across a token refresh's
/// network call, which holds only the item's own lock (`ItemFileLock`): so a refresh blocks
/// its item, never its neighbours.
///
/// Why the folder and not a lock file per item for this step: a lock file can be removed or
/// replaced while a writer holds it, and the next writer then locks a new file and writes
/// beside the first (measured on the Secret portal store with a lock file per item: 4
/// writers × 50 lost 123, 143 and 141 of 200 writes with the lock file replaced by a folder,
/// and 42 to 89 with it deleted every 2 ms, without an error). The folder cannot be removed
/// while it holds files, nor swapped by anyone but this user (`FolderSafety`), and nothing
/// outside the app writes these files: so, unlike the keyring's, this lock is never
/// skipped, and a broken item lock file costs at most a second refresh, never a write. When
/// it cannot be taken (`flock` unsupported, as on some network file systems) the write
/// fails with ``FileStoreError/fileUnavailable(path:reason:)``; it never goes on
/// unlocked. The check under the lock then makes the read-compare-write of a mutation
/// airtight: a file has no window between check and write. It also guards what the items
/// of a folder share: the first write's new key, the rollback records.
///
/// Threads and tasks of this process queue on the folder's `LockQueue` first (`flock` locks
/// belong to the open file, not the thread). A waiter that reaches its deadline names the holder
/// as the kernel tells it (`LockHolder`: `/proc/locks`), or says it is unknown
/// (`SecureDictionaryError.lockHeld(pid:command:)`).
///
/// Invariant, *nothing left behind*: a writer killed between creating its temporary file and
/// renaming it leaves `.NAME.RANDOM.tmp` (`ItemFileFolder.replace`); the next holder of the
/// lock removes such files. Sound because temporaries are made only under this lock: while
/// it is held, no other writer is between its temporary and its rename, so every temporary
/// found is one whose writer is gone. Only names of exactly that pattern, regular files of
/// this user, are removed. Test: `FileStoreAdversarialTests.aWriteRemovesTheTemporariesOfKilledWritersAndNothingElse`.
final class FileWriterLock: ItemWriterLock {
    private let folder: ItemFileFolder
    private let available: @Sendable () throws(SecureDictionaryError) -> Void
    /// The folder's descriptor that holds the lock, while it is held.
    private let held: HeldFlock

    /// `available` runs first, before anything is created (see `ItemFileStore.available`).
    init(folder: ItemFileFolder, available: @escaping @Sendable () throws(SecureDictionaryError) -> Void = {}) {
        self.folder = folder
        self.available = available
        held = HeldFlock(name: folder.path)
    }

    func queue(until deadline: Deadline) -> LockQueue { held.queue }

    func acquire(until deadline: Deadline) throws(SecureDictionaryError) -> Bool {
        try available()
        try held.acquire { () throws(SecureDictionaryError) in try lockFolder(until: deadline) }
        return true
    }

    func release() { held.release() }

    /// Opens the folder (creating it, checked) and locks it; returns the locked descriptor.
    private func lockFolder(until deadline: Deadline) throws(SecureDictionaryError) -> Int32 {
        let opened = try folder.withFolder(create: true) { descriptor throws(SecureDictionaryError) -> Int32 in
            let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 0)
            guard copy >= 0 else { throw .fileUnavailable(path: folder.path, reason: String(cString: strerror(errno))) }
            return copy
        }
        guard let descriptor = opened else { throw .fileUnavailable(path: folder.path, reason: "the folder vanished") }
        do throws(SecureDictionaryError) {
            try Flock.exclusive(descriptor, until: deadline, path: folder.path)
        } catch {
            close(descriptor)
            throw error
        }
        folder.removeTemporaries(in: descriptor)
        return descriptor
    }
}

/// Waiting for an exclusive `flock`, the one way both file-store locks wait.
enum Flock {
    /// Locks `descriptor` exclusively, trying until `deadline` (once when it has passed).
    ///
    /// - Throws: `SecureDictionaryError.lockHeld(pid:command:)` when another holds it at the
    ///   deadline, naming the holder the kernel lists (`LockHolder`);
    ///   ``FileStoreError/fileUnavailable(path:reason:)`` when `flock` is not supported.
    static func exclusive(_ descriptor: Int32, until deadline: Deadline, path: String) throws(SecureDictionaryError) {
        var pause: UInt32 = 100  // microseconds, doubling up to 2 ms
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let failure = errno
            if failure == EINTR { continue }
            guard failure == EWOULDBLOCK else {
                throw .fileUnavailable(
                    path: path, reason: "cannot lock \(path) (\(String(cString: strerror(failure)))): use a local folder")
            }
            guard deadline.remaining > .zero else {
                let holder = LockHolder.of(descriptor)
                throw .lockHeld(pid: holder.map { Int($0.pid) }, command: holder?.command)
            }
            usleep(pause)
            pause = min(pause * 2, 2_000)
        }
    }
}

/// What both file-store locks share: this process's queue for the lock's name (threads of
/// one process never meet on `flock`; the caller holds the queue around the lock), then the
/// locked descriptor, held until ``release()``.
final class HeldFlock: Sendable {
    /// The `LockQueue` of the lock's name.
    let queue: LockQueue
    private let descriptor = Mutex<Int32?>(nil)

    init(name: String) { queue = LockQueue.shared(for: name) }

    /// Holds what `locking` opened and locked; call holding ``queue``.
    ///
    /// - Throws: what `locking` throws.
    func acquire(locking: () throws(SecureDictionaryError) -> Int32) throws(SecureDictionaryError) {
        let locked = try locking()
        descriptor.withLock { $0 = locked }
    }

    /// Unlocks and closes the descriptor (the caller then leaves ``queue``).
    func release() {
        if let held = descriptor.withLock({ held in
            defer { held = nil }
            return held
        }) {
            flock(held, LOCK_UN)
            close(held)
        }
    }
}
