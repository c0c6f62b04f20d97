#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A program started with `posix_spawn(3)`, its standard output on a pipe and its standard
/// input and error on `/dev/null`: what `doctor` used Foundation's `Process` for, which
/// FoundationEssentials does not have.
///
/// ```swift
/// guard let child = ChildProcess("/usr/bin/gnome-keyring-daemon", ["--version"], environment: environment)
/// else { return nil }
/// let text = try child.output.readToEnd()
/// child.waitForExit()
/// ```
struct ChildProcess: Sendable {
    let pid: pid_t
    /// The read end of the program's standard output; its reader closes it.
    let output: FileDescriptor

    /// Starts `program` (an absolute path) with `arguments` and exactly `environment`; `nil`
    /// when it cannot be started.
    init?(_ program: String, _ arguments: [String], environment: [String: String]) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return nil }
        // Neither end may leak into programs that other threads start.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        // Default signal handling, and no signal blocked, whatever this process set up.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for string in argv + envp { free(string) }
        }
        var pid = pid_t()
        let result = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        close(ends[1])
        guard result == 0 else {
            close(ends[0])
            return nil
        }
        self.pid = pid
        output = FileDescriptor(rawValue: ends[0])
    }

    /// Waits until the program has exited, and reaps it.
    func waitForExit() {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
    }
}
