import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

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
/// - **A region owns its pages.** It maps them itself (`mmap`, anonymous and private), so
///   `madvise` gets page-aligned memory (on anything else it fails with `EINVAL`), and no
///   other allocation shares a page: memory locks do not stack, so one `munlock` of a page
///   shared by two owners would unlock both.
/// - **Each call's result is checked.** `MADV_DONTDUMP` keeps the pages out of core dumps
///   (`gcore`, `coredumpctl`, crash reports); `MADV_WIPEONFORK` gives a `fork()` child zeros
///   where the parent has these pages (Linux 4.14 and later; a failure is logged once and
///   counted like the others); `mlock` keeps them out of swap. When `mlock` fails
///   (`RLIMIT_MEMLOCK` too small, typically), the region works unlocked: that is said once in
///   the log and in ``SecureMemory/status`` (which `secure-dict doctor` reports), and no call
///   ever fails for it.
/// - **Written before it is shared, read-only after.** Its creator fills it before handing
///   it to anyone; nothing writes it afterwards but `deinit`, which wipes it.
final class SecureRegion: @unchecked Sendable {  // written only before it is shared (see above), then read
    /// The first byte; `byteCount` bytes from here are this region's.
    let base: UnsafeMutableRawPointer
    let byteCount: Int
    /// Whole pages: what was mapped, locked and advised.
    let mappedCount: Int
    private let isLocked: Bool

    /// Maps at least `byteCount` bytes (one page for 0), zero-filled.
    ///
    /// Stops the program only when the system has no memory to map, as any allocation does.
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
        self.byteCount = byteCount
        let dumpable = madvise(mapped, mappedCount, MADV_DONTDUMP) == 0 ? nil : errno
        let forkWipe = madvise(mapped, mappedCount, MADV_WIPEONFORK) == 0 ? nil : errno
        let lockError = mlock(mapped, mappedCount) == 0 ? nil : errno
        isLocked = lockError == nil
        SecureMemory.mapped(
            mappedCount, locked: isLocked, lockError: lockError, adviseError: dumpable, forkWipeError: forkWipe, logger: logger)
    }

    deinit {
        explicit_bzero(base, mappedCount)
        if isLocked { munlock(base, mappedCount) }
        munmap(base, mappedCount)
        SecureMemory.unmapped(mappedCount, locked: isLocked)
    }

    /// The bytes `range` of this region (within `byteCount`).
    func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        precondition(range.lowerBound >= 0 && range.upperBound <= byteCount, "outside the region")
        return UnsafeRawBufferPointer(start: base + range.lowerBound, count: range.count)
    }
}
