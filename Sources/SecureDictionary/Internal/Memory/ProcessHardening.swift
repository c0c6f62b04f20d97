import Glibc

/// ``SecureDictionary/hardenProcess()``'s work.
enum ProcessHardening {
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
        return SecureDictionary.HardeningResult(coreDumpsDisabled: coreDumpsOff, attachable: kept != nil, note: kept)
    }
}
