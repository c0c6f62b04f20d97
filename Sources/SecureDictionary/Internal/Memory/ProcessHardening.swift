import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// ``SecureDictionary/hardenProcess()``'s work, and the state `secure-dict doctor` reports.
///
/// ```swift
/// let status = ProcessHardening.status
/// print(status.requested, status.coreDumpLimit ?? -1, status.dumpable)
/// ```
package enum ProcessHardening {
    /// What holds in this process now.
    package struct Status: Sendable, Equatable {
        /// Whether ``SecureDictionary/hardenProcess()`` was called.
        package var requested: Bool
        /// The soft core-dump size limit (`RLIMIT_CORE`) in bytes; `nil` when unlimited.
        package var coreDumpLimit: Int?
        /// Whether the process is dumpable (`prctl(PR_GET_DUMPABLE)`): other processes of the
        /// user can attach with `ptrace` (gdb, gcore) and read `/proc/PID/mem`.
        package var dumpable: Bool
        /// Why the process was left dumpable, when it was asked to be hardened.
        package var dumpableKept: String?
    }

    private static let done = Mutex<(requested: Bool, dumpableKept: String?)>((false, nil))

    package static var status: Status {
        let (requested, kept) = done.withLock { $0 }
        var limit = rlimit()
        let core = getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit) == 0 ? limit.rlim_cur : rlim_t.max
        return Status(
            requested: requested, coreDumpLimit: core == rlim_t.max ? nil : Int(clamping: core),
            dumpable: ProcessControl.isDumpable, dumpableKept: kept)
    }

    /// No core dumps (soft and hard `RLIMIT_CORE` 0) and, outside a snap, not dumpable.
    ///
    /// Why not in a snap: xdg-desktop-portal identifies its caller by reading the caller's
    /// `/proc/PID/…`, which a process that is not dumpable closes (a hardened KeePassXC snap
    /// broke the portal so), and the encrypted-file store's portal key source needs the Secret
    /// portal. A Flatpak app's `/proc` entries the portal reads are its bus proxy's: untouched.
    static func apply(sandbox: Sandbox?) -> SecureDictionary.HardeningResult {
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        let coreDumpsOff = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit) == 0
        var kept: String?
        if case .snap = sandbox {
            kept = "in a snap the Secret portal reads the caller's /proc/PID, which a process that is not dumpable closes"
        } else if let error = ProcessControl.setDumpable(false) {
            kept = "prctl(PR_SET_DUMPABLE, 0) failed: \(String(cString: strerror(error)))"
        }
        done.withLock { $0 = (true, kept) }
        return SecureDictionary.HardeningResult(coreDumpsDisabled: coreDumpsOff, attachable: kept != nil, note: kept)
    }
}
