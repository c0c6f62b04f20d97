#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `posix_spawn(3)` for `keyring run`: the program's standard input from a descriptor (or
/// inherited), its output to a file or a descriptor (or inherited, with every other
/// descriptor), default signal handling, and optionally a session of its own.
enum Spawn {
    /// glibc's POSIX_SPAWN_SETSID (since 2.26), which Swift does not import (`_GNU_SOURCE`).
    private static let posixSpawnSetSID: Int32 = 0x80

    /// A pipe whose two ends close on exec.
    static func pipe() -> [Int32]? {
        var ends: [Int32] = [-1, -1]
        guard Glibc.pipe(&ends) == 0 else { return nil }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return ends
    }

    /// Marks every descriptor above 2 close-on-exec; returns those that were not, to be
    /// restored after the spawn (`closefrom` as a file action needs `_GNU_SOURCE`).
    private static func closeOnExec() -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap(Int32.init).filter { descriptor in
            guard descriptor > 2 else { return false }
            let flags = fcntl(descriptor, F_GETFD)
            guard flags >= 0, flags & FD_CLOEXEC == 0 else { return false }
            return fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) == 0
        }
    }

    enum Result {
        case success(pid_t)
        case failure(Int32)
    }

    /// Starts `program`. `output`: a file for standard output and error; `standardOutput`: a
    /// descriptor for standard output (standard error then goes to `/dev/null`). With either,
    /// the program keeps no other descriptor of ours: a caller's pipe would never see its end.
    static func start(
        _ program: String, _ arguments: [String], environment: [String: String], standardInput: Int32? = nil,
        output: String? = nil, standardOutput: Int32? = nil, newSession: Bool = false, searchPath: Bool = false
    ) -> Result {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let detached = output != nil || standardOutput != nil
        if let standardInput {
            posix_spawn_file_actions_adddup2(&actions, standardInput, STDIN_FILENO)
        } else if detached {
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        }
        if let output {
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO)
        } else if let standardOutput {
            posix_spawn_file_actions_adddup2(&actions, standardOutput, STDOUT_FILENO)
            posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        }
        let inherited = detached ? closeOnExec() : []
        defer { for descriptor in inherited { _ = fcntl(descriptor, F_SETFD, 0) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        if newSession { flags |= posixSpawnSetSID }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for string in argv + envp { free(string) }
        }
        var pid = pid_t()
        let result =
            searchPath
            ? posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
            : posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        return result == 0 ? .success(pid) : .failure(result)
    }
}
