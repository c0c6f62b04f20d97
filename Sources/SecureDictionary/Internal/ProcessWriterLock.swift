#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Synchronization

/// A random stamp that every writer puts in the lock file after each write.
///
/// A writer that finds the stamp it saw before its last read knows that no other
/// SecureDictionary writer has written since, and can skip re-reading the item.
struct WriteStamp: Sendable, Equatable {
    let high: UInt64
    let low: UInt64

    static let none = WriteStamp(high: 0, low: 0)

    static func random() -> WriteStamp {
        var generator = SystemRandomNumberGenerator()
        return WriteStamp(high: generator.next(), low: generator.next())
    }
}

/// Serialises writers of one item across processes with `flock(2)` on a lock file that is
/// never deleted, and carries the item's ``WriteStamp``.
///
/// The file lives in `$XDG_RUNTIME_DIR/securedictionary/` (or, when that is unset, in
/// `/tmp/securedictionary-<uid>/`, which must be a directory owned by the user with mode
/// 0700). Its name is a hash of the collection and item name: two items sharing a file by
/// a hash collision only serialise more than they need to.
///
/// Rules, and why:
/// 1. Readers read the stamp *before* the item: a write that lands in between then shows
///    up as a changed stamp at the next write, never as a missed change.
/// 2. Writers write the stamp *after* the item, under the lock, also after a write whose
///    outcome is unknown: others must re-read in both cases.
/// 3. After taking the lock, a writer checks that the path still names the file it locked,
///    and reopens it if not: should the runtime folder be cleaned (at logout, say), two
///    processes must not lock two different files.
///
/// Used under the item's in-process lock only; the descriptor sits in a `Mutex` so that
/// reopening it is safe all the same.
final class ProcessWriterLock: Sendable {
    let path: String
    private let descriptor: Mutex<Int32>

    /// Opens (creating when needed) the lock file of `item`.
    ///
    /// - Throws: ``SecureDictionaryError/lockFileUnavailable(reason:)``.
    init(item: KeyringItem, directory: String? = nil) throws(SecureDictionaryError) {
        let folder = if let directory { directory } else { try Self.defaultDirectory() }
        let key = "\(item.collection.alias)\u{0}\(item.name)"
        path = "\(folder)/\(String(Self.fnv1a(key), radix: 16)).lock"
        descriptor = Mutex(try Self.open(path))
    }

    deinit { descriptor.withLock { _ = close($0) } }

    private static func open(_ path: String) throws(SecureDictionaryError) -> Int32 {
        let opened = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if opened < 0 {
            throw .lockFileUnavailable(reason: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        return opened
    }

    /// Whether `path` still names the file open as `descriptor`.
    private func pathNamesOpenFile(_ descriptor: Int32) -> Bool {
        var open = stat(), named = stat()
        guard fstat(descriptor, &open) == 0, stat(path, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    /// Takes the exclusive lock, waiting for it at most `timeout`. Pair with ``unlock()``.
    ///
    /// - Throws: ``SecureDictionaryError/timedOut`` when another process holds the lock past
    ///   the deadline.
    func lock(timeout: Duration) throws(SecureDictionaryError) {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        try descriptor.withLock { descriptor throws(SecureDictionaryError) in
            var pauseMicroseconds: UInt32 = 100
            while true {
                if flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
                    if pathNamesOpenFile(descriptor) { return }
                    // The file we locked was removed or replaced: lock the one at the path.
                    close(descriptor)
                    descriptor = try Self.open(path)
                    continue
                }
                let failure = errno
                if failure == EINTR { continue }
                guard failure == EWOULDBLOCK else {
                    throw .lockFileUnavailable(reason: "flock failed: \(String(cString: strerror(failure)))")
                }
                if clock.now >= deadline { throw .timedOut }
                usleep(pauseMicroseconds)
                pauseMicroseconds = min(pauseMicroseconds * 2, 5_000)
            }
        }
    }

    func unlock() {
        descriptor.withLock { _ = flock($0, LOCK_UN) }
    }

    /// The stamp of the last write (``WriteStamp/none`` before the first one).
    func readStamp() -> WriteStamp {
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = descriptor.withLock { descriptor in
            bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, 16, 0) }
        }
        guard count == 16 else { return .none }
        return bytes.withUnsafeBytes {
            WriteStamp(high: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                       low: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }

    /// Records a new random stamp; call it under the lock, after the keyring write.
    @discardableResult
    func writeNewStamp() -> WriteStamp {
        let stamp = WriteStamp.random()
        var bytes = [UInt8](repeating: 0, count: 16)
        bytes.withUnsafeMutableBytes {
            $0.storeBytes(of: stamp.high, toByteOffset: 0, as: UInt64.self)
            $0.storeBytes(of: stamp.low, toByteOffset: 8, as: UInt64.self)
        }
        // A short write leaves a stamp nobody has seen: others re-read, which is safe.
        descriptor.withLock { descriptor in
            _ = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, 16, 0) }
        }
        return stamp
    }

    /// `$XDG_RUNTIME_DIR/securedictionary`, or `/tmp/securedictionary-<uid>` when unset.
    static func defaultDirectory() throws(SecureDictionaryError) -> String {
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return try privateDirectory("\(runtime)/securedictionary")
        }
        return try privateDirectory("/tmp/securedictionary-\(getuid())")
    }

    static func privateDirectoryForTesting(_ path: String) throws(SecureDictionaryError) -> String {
        try privateDirectory(path)
    }

    /// Creates `path` with mode 0700 if needed, and checks that it is a directory of this
    /// user that nobody else can write (a directory another user planted in /tmp is refused).
    private static func privateDirectory(_ path: String) throws(SecureDictionaryError) -> String {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw .lockFileUnavailable(reason: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw .lockFileUnavailable(reason: "cannot inspect \(path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == getuid(), info.st_mode & 0o022 == 0 else {
            throw .lockFileUnavailable(reason: "\(path) is not a private directory of this user")
        }
        return path
    }

    /// 64-bit FNV-1a of the UTF-8 bytes: stable across processes and runs (unlike `Hasher`).
    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}
