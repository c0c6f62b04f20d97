import Glibc

extension Spawn {
    /// The paths a shell tries for `program`, in order: itself when it holds a `/`, else each
    /// folder of this process's `$PATH` (`/bin:/usr/bin` without one; an empty folder is the
    /// current one). The one `PATH` search of the tool and the tests; `path` searches another
    /// environment's `PATH` instead.
    ///
    /// ```swift
    /// let daemon = Spawn.candidates(for: "dbus-daemon").first { access($0, X_OK) == 0 }
    /// ```
    public static func candidates(for program: String, path: String? = nil) -> [String] {
        guard !program.contains("/") else { return [program] }
        let folders = (path ?? getenv("PATH").map { String(cString: $0) } ?? "/bin:/usr/bin").split(
            separator: ":", omittingEmptySubsequences: false)
        return folders.map { $0.isEmpty ? program : "\($0)/\(program)" }
    }
}
