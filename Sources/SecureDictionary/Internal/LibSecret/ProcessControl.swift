import CSecretShim
import Glibc

/// The process's own settings that need the C shim (`prctl` is variadic): one function per
/// call, as ``SecretServiceCalls`` wraps the service's. ``ProcessHardening`` decides.
enum ProcessControl {
    /// `prctl(PR_SET_DUMPABLE, dumpable)`; the `errno` of a failure, or `nil`.
    static func setDumpable(_ dumpable: Bool) -> Int32? {
        sd_process_prctl(PR_SET_DUMPABLE, dumpable ? 1 : 0) == 0 ? nil : errno
    }
}
