import SecureDictionary

#if canImport(Glibc)
    import Glibc
#endif

/// The writer lock of one item of an encrypted-file store: `flock` on the item's own lock
/// file, `.<the item file's name>.lock` beside it. Every writer of the item holds it from
/// its check to its write; a token refresh holds it across its network call. Writers of the
/// folder's other items never wait for it (they wait only for the folder's write lock,
/// `FileWriterLock`, which a refresh takes for its write alone).
///
/// ```swift
/// let lock = ItemFileLock(folder: folder, item: item)
/// let held = try lock.acquireQueued(until: deadline)   // lockHeld names the holder at the deadline
/// defer { held.release() }
/// ```
///
/// Invariants, and why:
/// - **The file locked is the file named.** A lock file can be removed or replaced while
///   someone holds it; after the `flock`, the descriptor and the name are compared (device
///   and inode), and a lock on a file no longer named so is dropped and taken again, so
///   writers that arrive later all meet on one file. What a same-user process that deletes
///   the file while it is held can still do is let two writers of the item in at once:
///   then two refreshes may run, but no write is lost, because every check and its write
///   hold the folder's lock too (`FileWriterLock`).
/// - **Never removed.** A lock file stays after its item is deleted (removing it would let
///   a writer holding the old file and one holding a new file in at once). It is empty.
/// - **Nothing before the folder checks.** `available` and the folder's checks
///   (`FolderSafety`) run before the file is created, as for every write.
/// - **Killed, released.** The lock goes with the holder's descriptors: a process killed
///   while it holds it frees it at once.
final class ItemFileLock: ItemWriterLock {
    private let folder: ItemFileFolder
    private let name: String
    private let available: @Sendable () throws(SecureDictionaryError) -> Void
    /// The lock file's descriptor, while the lock is held.
    private let held: HeldFlock

    init(
        folder: ItemFileFolder, item: KeyringItem,
        available: @escaping @Sendable () throws(SecureDictionaryError) -> Void = {}
    ) {
        self.folder = folder
        name = Self.lockFileName(of: item)
        self.available = available
        held = HeldFlock(name: "\(folder.path)/\(name)")
    }

    /// The lock file's name: the item file's, hidden, with `.lock` (no item file, temporary
    /// or listing pattern matches it).
    static func lockFileName(of item: KeyringItem) -> String { ".\(ItemFileFolder.fileName(of: item)).lock" }

    func queue(until deadline: Deadline) -> LockQueue { held.queue }

    func acquire(until deadline: Deadline) throws(SecureDictionaryError) -> Bool {
        try available()
        try held.acquire { () throws(SecureDictionaryError) in try lockFile(until: deadline) }
        return true
    }

    func release() { held.release() }

    /// Opens (creating) and locks the lock file, until the file locked is the one named.
    private func lockFile(until deadline: Deadline) throws(SecureDictionaryError) -> Int32 {
        let path = "\(folder.path)/\(name)"
        while true {
            let opened = try folder.withFolder(create: true) { directory throws(SecureDictionaryError) -> Int32 in
                let descriptor = openat(directory, name, O_RDONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
                guard descriptor >= 0 else {
                    let reason = errno == ELOOP ? "the lock file is a symbolic link: remove it" : String(cString: strerror(errno))
                    throw errno == ELOOP ? .unsafePath(path: path, reason: reason) : .fileUnavailable(path: path, reason: reason)
                }
                do throws(SecureDictionaryError) {
                    try Flock.exclusive(descriptor, until: deadline, path: path)
                } catch {
                    close(descriptor)
                    throw error
                }
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
}
