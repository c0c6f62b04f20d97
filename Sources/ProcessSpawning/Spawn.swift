import FoundationEssentials
public import Glibc

/// `posix_spawn(3)` as the tool and the tests need it: each standard descriptor from a
/// descriptor, a file, `/dev/null` or this process; default signal handling and no blocked
/// signal, whatever this process set up; optionally a session of the program's own, and no
/// descriptor of this process beyond the three.
///
/// ```swift
/// let (read, write) = try Spawn.pipe()
/// let pid = try Spawn.start(
///     "/usr/bin/gnome-keyring-daemon", ["--version"], environment: ProcessInfo.processInfo.environment,
///     standardInput: .null, standardOutput: .descriptor(write), standardError: .null)
/// close(write)
/// ```
///
/// swift-subprocess is not used here: it closes every descriptor above the three standard
/// ones in the child, which `secure-dict keyring run` must pass on to COMMAND
/// (`--passphrase-fd 3`), and it reaps its children itself, where `keyring run`, a child
/// subreaper, reaps every orphan of its session.
public enum Spawn {
    /// Where the program's standard input comes from.
    public enum Input: Sendable {
        /// This process's own.
        case inherited
        /// `/dev/null`: the program reads the end at once.
        case null
        /// A descriptor of this process (the read end of a pipe, say); the caller closes it.
        case descriptor(Int32)
    }

    /// Where the program's standard output or error goes.
    public enum Output: Sendable {
        /// This process's own.
        case inherited
        /// `/dev/null`.
        case null
        /// A descriptor of this process (the write end of a pipe, say); the caller closes it.
        case descriptor(Int32)
        /// A file, appended to, made with mode 0600 when it does not exist.
        case file(String)
        /// For standard error: wherever standard output goes.
        case standardOutput
    }

    /// A failed call's `errno`, described by `strerror(3)` ("No such file or directory").
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let code: Int32

        public init(code: Int32) { self.code = code }

        public var description: String { String(cString: strerror(code)) }
    }

    /// A pipe whose two ends close on exec: no program that another thread starts inherits
    /// either of them.
    public static func pipe() throws(Failure) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard systemPipe(&ends) == 0 else { throw Failure(code: errno) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    /// Starts `program` with `arguments` and exactly `environment`; returns its pid.
    ///
    /// - Parameters:
    ///   - searchesPath: looks `program` up in the `PATH` of this process when it has no
    ///     slash (`posix_spawnp`); otherwise it is a path.
    ///   - keepsOtherDescriptors: `false` closes every descriptor above the three standard
    ///     ones in the program, so that it holds no pipe end a caller waits on.
    ///   - newSession: the program leads a session of its own (`setsid`): a terminal's
    ///     signals and a kill of this process group spare it.
    ///   - ignoring: signals the program starts with ignored (those this process was started
    ///     with ignored, say); every other one has its default action.
    /// - Throws: ``Failure`` with `posix_spawn`'s error when the program cannot be started
    ///   (`ENOENT`: no such program).
    public static func start(
        _ program: String, _ arguments: [String], environment: [String: String],
        standardInput: Input = .inherited, standardOutput: Output = .inherited, standardError: Output = .inherited,
        keepsOtherDescriptors: Bool = true, newSession: Bool = false, searchesPath: Bool = false,
        ignoring ignored: Set<Int32> = []
    ) throws(Failure) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        switch standardInput {
        case .inherited: break
        case .null: posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        case .descriptor(let descriptor): posix_spawn_file_actions_adddup2(&actions, descriptor, STDIN_FILENO)
        }
        for (output, target) in [(standardOutput, STDOUT_FILENO), (standardError, STDERR_FILENO)] {
            switch output {
            case .inherited: break
            case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            case .descriptor(let descriptor): posix_spawn_file_actions_adddup2(&actions, descriptor, target)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            case .standardOutput: posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, target)
            }
        }
        let inherited = keepsOtherDescriptors ? [] : markCloseOnExec()
        defer { for descriptor in inherited { _ = fcntl(descriptor, F_SETFD, 0) } }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        for signal in ignored { sigdelset(&all, signal) }
        posix_spawnattr_setsigdefault(&attributes, &all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        if newSession { flags |= posixSpawnSetSID }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        // The environment may hold secrets (`secure-dict exec --mask`): wiped before it is freed.
        defer {
            for string in argv + envp {
                if let string { explicit_bzero(string, strlen(string)) }
                free(string)
            }
        }
        var pid = pid_t()
        let result =
            searchesPath
            ? posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
            : posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard result == 0 else { throw Failure(code: result) }
        return pid
    }

    /// glibc's POSIX_SPAWN_SETSID (since 2.26), which Swift does not import (`_GNU_SOURCE`).
    private static let posixSpawnSetSID: Int32 = 0x80

    /// Marks every descriptor above 2 close-on-exec; returns those that were not, to be
    /// restored after the spawn (`closefrom` as a file action needs `_GNU_SOURCE`).
    private static func markCloseOnExec() -> [Int32] {
        guard let folder = opendir("/proc/self/fd") else { return [] }
        defer { closedir(folder) }
        let own = dirfd(folder)
        var marked: [Int32] = []
        for name in DirectoryEntries.names(in: folder) {
            guard let descriptor = Int32(name), descriptor > 2, descriptor != own else { continue }
            let flags = fcntl(descriptor, F_GETFD)
            guard flags >= 0, flags & FD_CLOEXEC == 0, fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) == 0 else { continue }
            marked.append(descriptor)
        }
        return marked
    }
}

/// `pipe(2)`, under a name that ``Spawn/pipe()`` does not hide.
private func systemPipe(_ ends: inout [Int32]) -> Int32 { pipe(&ends) }
