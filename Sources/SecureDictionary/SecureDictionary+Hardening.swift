extension SecureDictionary {
    /// What ``hardenProcess()`` achieved.
    public struct HardeningResult: Sendable, Equatable, CustomStringConvertible {
        /// No core file will be written: the core-dump size limit (`RLIMIT_CORE`) is 0.
        public var coreDumpsDisabled: Bool
        /// Whether other processes of the user can still attach with `ptrace` (gdb, gcore)
        /// and read this process's memory; `false` once it is not dumpable.
        public var attachable: Bool
        /// Why the process stayed attachable, when it did (inside a snap, for the Secret portal).
        public var note: String?

        public var description: String {
            "core dumps \(coreDumpsDisabled ? "off" : "on"), \(attachable ? "attachable" : "not attachable")"
                + (note.map { " (\($0))" } ?? "")
        }
    }

    /// Keeps this process's memory out of core dumps and out of reach of other processes of
    /// the same user, for the rest of its life. Call it once, early in `main`:
    ///
    /// ```swift
    /// SecureDictionary.hardenProcess()                     // before the first secret is read
    /// let settings = try SecureDictionary(name: "settings")
    /// ```
    ///
    /// The library keeps its own copies of keys and values out of core dumps and swap; what
    /// you read is your copy, in ordinary memory. This call covers those and everything else:
    /// it sets the core-dump size limit to 0 (`RLIMIT_CORE`, soft and hard: no core file,
    /// nothing for `coredumpctl`) and makes the process not dumpable (`prctl(PR_SET_DUMPABLE, 0)`:
    /// `gdb`, `gcore`, `strace`, `/proc/PID/mem` of the same user and attaching crash reporters
    /// are refused). The library never does it by itself: it takes debugging and profiling
    /// away. `secure-dict doctor` reports whether programs started from its shell may dump core.
    ///
    /// Inside a snap the process stays dumpable (``HardeningResult/note`` says so): there
    /// xdg-desktop-portal reads the caller's `/proc/PID/…` to identify it, so the Secret portal
    /// (`EncryptedFileStore(keySource: .secretPortal)`) would refuse it. A Flatpak's portal
    /// reads the bus proxy's entries instead (`scripts/test --filter SecretPortal` checks it).
    @discardableResult
    public static func hardenProcess() -> HardeningResult {
        ProcessHardening.apply(sandbox: Sandbox.current)
    }
}
