import Glibc
import SecureDictionary

/// `secure-dict doctor`'s "memory" and "core dumps" findings: whether the memory in which the
/// library keeps secrets can be locked here (`RLIMIT_MEMLOCK`), and whether a crash of a
/// program started from here would leave a core dump (the library keeps its own copies out
/// of one; what an application reads is its own, which `SecureDictionary.hardenProcess()` covers).
enum DoctorMemory {
    static func findings() -> [DoctorFinding] {
        [memoryFinding(probe()), coreDumpFinding()]
    }

    /// The library's memory status once one dictionary (in memory, nothing stored) has held a value.
    static func probe() -> SecureMemory.Status {
        if let probe = try? SecureDictionary(
            name: "doctor-memory-probe", applicationID: DoctorReport.scratchApplicationID,
            options: .init(store: InMemoryKeyringStore()))
        {
            try? probe.setValue("probe", forKey: "probe")
            return withExtendedLifetime(probe) { SecureMemory.status }
        }
        return SecureMemory.status
    }

    static func memoryFinding(_ status: SecureMemory.Status) -> DoctorFinding {
        let limit = status.memoryLockLimit.map { "\($0 / 1024) KiB" } ?? "unlimited"
        if status.lockFailures > 0 || status.unlockedRegions > 0 {
            let reason = status.lastLockError.map { String(cString: strerror($0)) } ?? "refused"
            return DoctorFinding(
                check: "memory", status: .note,
                detail: "the memory holding secrets cannot be locked here (mlock: \(reason); RLIMIT_MEMLOCK \(limit)): "
                    + "they stay out of core dumps, but may reach swap; everything else works",
                fix:
                    "raise the limit: ulimit -l (the shell), LimitMEMLOCK= (a systemd unit), memlock in /etc/security/limits.conf"
            )
        }
        if status.dumpAdviceFailures > 0 {
            return DoctorFinding(
                check: "memory", status: .note,
                detail: "madvise(MADV_DONTDUMP) failed \(status.dumpAdviceFailures) time(s): secrets may reach a core dump")
        }
        return DoctorFinding(
            check: "memory", status: .ok,
            detail: "the memory holding secrets is locked (out of swap) and out of core dumps; RLIMIT_MEMLOCK \(limit)")
    }

    /// Core dumps of programs started from here: the limit this process inherited.
    static func coreDumpFinding() -> DoctorFinding {
        var limit = rlimit()
        let core = getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit) == 0 ? limit.rlim_cur : rlim_t.max
        if core == 0 {
            return DoctorFinding(check: "core dumps", status: .ok, detail: "off for programs started from here (RLIMIT_CORE 0)")
        }
        return DoctorFinding(
            check: "core dumps", status: .note,
            detail: "on for programs started from here: the library's own copies of secrets stay out of them, "
                + "what an application read does not",
            fix: "an application that must keep its copies out too calls SecureDictionary.hardenProcess() at start "
                + "(no core dumps, not attachable)")
    }
}
