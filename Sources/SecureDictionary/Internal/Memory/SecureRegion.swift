import Glibc
import Logging
import Synchronization

/// Memory for secrets: whole pages of its own, out of core dumps and (when the limit allows)
/// out of swap, wiped and unmapped when the last reference goes.
///
/// ```swift
/// let region = SecureRegion(byteCount: blob.count, logger: logger)
/// region.base.copyMemory(from: source, byteCount: blob.count)   // before it is shared
/// // … read it from any thread; the last release wipes it (explicit_bzero), unlocks, unmaps
/// ```
///
/// Rules, and why:
/// - **A region owns its pages** (`mmap`, anonymous and private): `madvise` needs page-aligned
///   memory (else `EINVAL`), and memory locks do not stack, so one `munlock` of a page shared
///   by two owners would unlock both.
/// - **Each call's result is checked.** `MADV_DONTDUMP` keeps the pages out of core dumps,
///   `MADV_WIPEONFORK` out of a `fork()` child (Linux 4.14 and later), `mlock` out of swap. A
///   failure (for `mlock`, typically `RLIMIT_MEMLOCK` too small) is logged once and, but for
///   `MADV_WIPEONFORK`'s, counted in ``SecureMemory/status`` (`secure-dict doctor` reports it);
///   the region still works.
/// - **Written before it is shared, read-only after**, but for `deinit`, which wipes it.
final class SecureRegion: @unchecked Sendable {  // written only before it is shared (see above), then read
    /// The first byte; the `byteCount` bytes asked for from here are this region's.
    let base: UnsafeMutableRawPointer
    /// Whole pages: what was mapped, locked and advised.
    let mappedCount: Int
    private let isLocked: Bool

    /// Maps at least `byteCount` bytes (one page for 0), zero-filled. Stops the program only
    /// when the system has no memory to map, as any allocation does.
    init(byteCount: Int, logger: Logger? = nil) {
        precondition(byteCount >= 0, "a negative region size")
        let page = SecureMemory.pageSize
        let (rounded, overflow) = max(byteCount, 1).addingReportingOverflow(page - 1)
        precondition(!overflow, "a region too large to map")
        mappedCount = rounded / page * page
        guard let mapped = mmap(nil, mappedCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            mapped != MAP_FAILED
        else {
            preconditionFailure("SecureDictionary: out of memory (mmap of \(mappedCount) bytes failed, errno \(errno))")
        }
        base = mapped
        let dumpable = madvise(mapped, mappedCount, MADV_DONTDUMP) == 0 ? nil : errno
        let forkWipe = madvise(mapped, mappedCount, MADV_WIPEONFORK) == 0 ? nil : errno
        let lockError = mlock(mapped, mappedCount) == 0 ? nil : errno
        isLocked = lockError == nil
        SecureMemory.mapped(lockError: lockError, adviseError: dumpable, forkWipeError: forkWipe, logger: logger)
    }

    deinit {
        explicit_bzero(base, mappedCount)
        if isLocked { munlock(base, mappedCount) }
        munmap(base, mappedCount)
        SecureMemory.unmapped(locked: isLocked)
    }

    /// The first `count` bytes (a ``Generation``'s blob, never more than the region it sized).
    func bytes(_ count: Int) -> UnsafeRawBufferPointer {
        precondition(count <= mappedCount, "outside the region")  // a reader past it would read another mapping
        return UnsafeRawBufferPointer(start: base, count: count)
    }
}

/// How the library's secret memory (every ``SecureRegion``) stands in this process: what
/// `secure-dict doctor` reports.
///
/// ```swift
/// let status = SecureMemory.status
/// if status.unlockedRegions > 0 { print("secrets may reach swap: raise ulimit -l") }
/// ```
package enum SecureMemory {
    /// The regions alive now, and what failed since the process started.
    package struct Status: Sendable, Equatable {
        /// Regions alive whose pages are locked in memory (`mlock`).
        package var lockedRegions = 0
        /// Regions alive that could not be locked (their secrets may reach swap).
        package var unlockedRegions = 0
        /// How many `mlock` calls failed since the process started, and the last one's `errno`
        /// (`ENOMEM` or `EPERM`: `RLIMIT_MEMLOCK` too small).
        package var lockFailures = 0
        package var lastLockError: Int32?
        /// How many `madvise(MADV_DONTDUMP)` calls failed (then those pages may be in a core dump).
        package var dumpAdviceFailures = 0
        /// The soft `RLIMIT_MEMLOCK` in bytes; `nil` when unlimited.
        package var memoryLockLimit: Int?
    }

    package static var status: Status {
        var status = state.withLock { $0.status }
        var limit = rlimit()
        if getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &limit) == 0 {
            status.memoryLockLimit = limit.rlim_cur == rlim_t.max ? nil : Int(clamping: limit.rlim_cur)
        }
        return status
    }

    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    private struct State {
        var status = Status()
        var warned = false
    }

    private static let state = Mutex(State())
    private static let defaultLogger = Logger(label: "SecureDictionary")

    /// Counts a region mapped (locked unless `lockError`); logs the process's first failure, once.
    static func mapped(lockError: Int32?, adviseError: Int32?, forkWipeError: Int32?, logger: Logger?) {
        let locked = lockError == nil
        let warn: Bool = state.withLock { state in
            if locked {
                state.status.lockedRegions += 1
            } else {
                state.status.unlockedRegions += 1
                state.status.lockFailures += 1
                state.status.lastLockError = lockError
            }
            if adviseError != nil { state.status.dumpAdviceFailures += 1 }
            guard !locked || adviseError != nil || forkWipeError != nil, !state.warned else { return false }
            state.warned = true
            return true
        }
        guard warn else { return }
        let logger = logger ?? defaultLogger
        func reason(_ error: Int32) -> String { String(cString: strerror(error)) }
        if let lockError {
            logger.warning(
                """
                could not lock the memory holding secrets (mlock: \(reason(lockError))): they may reach swap; raise \
                RLIMIT_MEMLOCK (ulimit -l, LimitMEMLOCK= in a systemd unit). Said once; `secure-dict doctor` shows the state
                """)
        }
        if let adviseError {
            logger.warning(
                "could not keep the memory holding secrets out of core dumps (madvise: \(reason(adviseError))). Said once")
        }
        if let forkWipeError {
            logger.warning(
                "could not have the memory holding secrets wiped in fork() children (madvise MADV_WIPEONFORK: \(reason(forkWipeError))). Said once"
            )
        }
    }

    static func unmapped(locked: Bool) {
        state.withLock { state in
            if locked { state.status.lockedRegions -= 1 } else { state.status.unlockedRegions -= 1 }
        }
    }
}

/// Overwrites memory the library owns with zeros in a way the compiler may not drop
/// (`explicit_bzero(3)`).
package enum Wipe {
    package static func bytes(_ buffer: inout [UInt8]) {
        buffer.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { explicit_bzero(base, raw.count) }
        }
        buffer.removeAll()
    }
}
