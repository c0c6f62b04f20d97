import Dispatch
import SecureDictionary
import Synchronization

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

/// A private D-Bus session bus with an unlocked gnome-keyring on it, for `secure-dict
/// keyring run`: what the repository's `scripts/with-private-keyring` does, in the tool.
///
/// ```swift
/// let session = try PrivateKeyringSession.start(keep: nil, timeout: .seconds(10))
/// let status = session.run(["swift", "test"])     // stops everything, returns COMMAND's status
/// ```
///
/// Every process of the session carries its own `XDG_RUNTIME_DIR` (the bus, the daemon,
/// COMMAND and whatever COMMAND starts), and that is how the session is found again to be
/// stopped: by this process when COMMAND ends or a signal comes, and by a watchdog process
/// (`secure-dict keyring watchdog`, in a session of its own) when this process dies
/// without a word, even by SIGKILL: it waits for the end of a pipe only this process holds.
final class PrivateKeyringSession {
    struct Failure: Error {
        let message: String
    }

    /// Folders: `base` (removed at the end) holds `runtime` and `control`; the keyring's own
    /// files live in `state` (in `base`, or the `--keep` folder).
    let base: String
    let runtime: String
    let state: String
    let busAddress: String
    private var children: [pid_t] = []
    private var watchdogPipe: Int32 = -1
    private var keepLock: Int32 = -1

    private init(base: String, state: String) {
        self.base = base
        runtime = "\(base)/runtime"
        self.state = state
        busAddress = "unix:path=\(base)/runtime/bus"
    }

    /// The tools, found in `PATH`, or what to install.
    private static func tool(_ name: String, package: String) throws(Failure) -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") where access("\(folder)/\(name)", X_OK) == 0 {
            return "\(folder)/\(name)"
        }
        throw Failure(
            message: "\(name) is not installed: install \(package) (Debian, Ubuntu: sudo apt-get install gnome-keyring dbus; "
                + "Fedora: sudo dnf install gnome-keyring dbus-daemon)")
    }

    /// Starts the bus, the watchdog and the keyring, and waits until its default collection
    /// is unlocked.
    static func start(keep: String?, timeout: Duration) throws(Failure) -> PrivateKeyringSession {
        let busDaemon = try tool("dbus-daemon", package: "dbus")
        let keyringDaemon = try tool("gnome-keyring-daemon", package: "gnome-keyring")
        // A short base path: unix socket paths must stay under 108 bytes.
        let parent = (ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.count <= 60 ? $0 : nil }) ?? "/tmp"
        var template = Array("\(parent)/sd-keyring.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw Failure(message: "cannot make a folder in \(parent): \(String(cString: strerror(errno)))")
        }
        let base = String(cString: made)
        var state = "\(base)/state"
        if let keep {
            state = keep.hasPrefix("/") ? keep : FileManager.default.currentDirectoryPath + "/" + keep
        }
        let session = PrivateKeyringSession(base: base, state: state)
        do throws(Failure) {
            try session.prepareFolders(keeping: keep != nil)
            try session.startBus(busDaemon, timeout: timeout)
            session.startWatchdog()
            try session.startKeyring(keyringDaemon, timeout: timeout)
        } catch {
            session.stop()
            throw error
        }
        return session
    }

    // MARK: Starting

    private func prepareFolders(keeping: Bool) throws(Failure) {
        for folder in [runtime, "\(base)/control", state, "\(state)/data", "\(state)/config", "\(state)/cache"] {
            if mkdir(folder, 0o700) != 0 && errno != EEXIST {
                throw Failure(message: "cannot make \(folder): \(String(cString: strerror(errno)))")
            }
        }
        chmod(state, 0o700)
        if keeping {
            // Two daemons on the same keyring files would overwrite each other.
            keepLock = open("\(state)/.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            guard keepLock >= 0, flock(keepLock, LOCK_EX | LOCK_NB) == 0 else {
                throw Failure(message: "\(state) is in use by another 'secure-dict keyring run'")
            }
        }
    }

    private func startBus(_ daemon: String, timeout: Duration) throws(Failure) {
        // No <servicedir>: nothing is D-Bus-activated, a Secret Service exists only when we
        // start one. The limits of the standard session.conf.
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <keep_umask/>
              <listen>unix:path=\(runtime)/bus</listen>
              <auth>EXTERNAL</auth>
              <limit name="max_incoming_bytes">1000000000</limit>
              <limit name="max_outgoing_bytes">1000000000</limit>
              <limit name="max_message_size">1000000000</limit>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>

            """
        let file = "\(base)/control/bus.conf"
        guard FileManager.default.createFile(atPath: file, contents: Data(config.utf8)) else {
            throw Failure(message: "cannot write \(file)")
        }
        let pid = try spawnDaemon(daemon, ["--config-file=\(file)", "--nofork", "--nopidfile"], log: "dbus-daemon.log")
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while access("\(runtime)/bus", F_OK) != 0 {
            guard isRunning(pid) else { throw Failure(message: "dbus-daemon exited at start: \(logTail("dbus-daemon.log"))") }
            guard ContinuousClock.now < deadline else { throw Failure(message: "the private D-Bus bus did not start in time") }
            usleep(20_000)
        }
    }

    private func startWatchdog() {
        guard let ends = Spawn.pipe() else { return }
        let spawned = Spawn.start(
            "/proc/self/exe", ["keyring", "watchdog", "--runtime", runtime, "--remove", base],
            environment: ProcessInfo.processInfo.environment, standardInput: ends[0], output: "/dev/null", newSession: true)
        close(ends[0])
        if case .success(let pid) = spawned {
            watchdogPipe = ends[1]
            children.append(pid)
        } else {
            close(ends[1])
        }
    }

    private func startKeyring(_ daemon: String, timeout: Duration) throws(Failure) {
        let password = try self.password()
        guard let ends = Spawn.pipe() else { throw Failure(message: "cannot make a pipe") }
        // --unlock reads the password to the end of its input: it unlocks, or on fresh
        // folders creates, the "login" collection, which becomes the default.
        let pid = try spawnDaemon(
            daemon, ["--foreground", "--unlock", "--components=secrets"], log: "gnome-keyring.log", input: ends[0])
        close(ends[0])
        _ = password.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }
        close(ends[1])
        // Wait until the default collection answers unlocked (a write sent earlier can get
        // a prompt that never completes).
        setenv("DBUS_SESSION_BUS_ADDRESS", busAddress, 1)
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            guard isRunning(pid) else {
                throw Failure(message: "gnome-keyring-daemon exited at start: \(logTail("gnome-keyring.log"))")
            }
            if let diagnosis = try? SecretServiceStore().diagnose(collection: .default, timeout: .seconds(2)),
                diagnosis.collection?.isLocked == false
            {
                return
            }
            guard ContinuousClock.now < deadline else {
                throw Failure(message: "gnome-keyring did not come up unlocked in time: \(logTail("gnome-keyring.log"))")
            }
            usleep(50_000)
        }
    }

    /// A new random password, or the one kept with `--keep` (made on the first run).
    private func password() throws(Failure) -> [UInt8] {
        let file = "\(state)/keyring-password"
        if let kept = FileManager.default.contents(atPath: file), !kept.isEmpty { return Array(kept) }
        var generator = SystemRandomNumberGenerator()
        let password = Array((0..<24).map { _ in String(UInt8.random(in: 0...255, using: &generator), radix: 16) }.joined().utf8)
        let descriptor = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw Failure(message: "cannot write \(file): \(String(cString: strerror(errno)))") }
        _ = password.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
        return password
    }

    /// The environment of the daemons: the session's folders, none of the caller's desktop.
    private var sessionEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in [
            "DBUS_STARTER_ADDRESS", "DBUS_STARTER_BUS_TYPE", "GNOME_KEYRING_CONTROL", "GNOME_KEYRING_PID", "SECRET_BACKEND",
            "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
        ] {
            environment[name] = nil
        }
        environment["DBUS_SESSION_BUS_ADDRESS"] = busAddress
        environment["XDG_RUNTIME_DIR"] = runtime
        environment["XDG_DATA_HOME"] = "\(state)/data"
        return environment
    }

    private func spawnDaemon(_ program: String, _ arguments: [String], log: String, input: Int32? = nil) throws(Failure)
        -> pid_t
    {
        var environment = sessionEnvironment
        environment["XDG_CONFIG_HOME"] = "\(state)/config"
        environment["XDG_CACHE_HOME"] = "\(state)/cache"
        switch Spawn.start(
            program, arguments, environment: environment, standardInput: input, output: "\(base)/control/\(log)")
        {
        case .success(let pid):
            children.append(pid)
            return pid
        case .failure(let code):
            throw Failure(message: "cannot start \(program): \(String(cString: strerror(code)))")
        }
    }

    private func logTail(_ log: String) -> String {
        let text = (FileManager.default.contents(atPath: "\(base)/control/\(log)")).map { String(decoding: $0, as: UTF8.self) }
        return text.map { $0.suffix(300).split(separator: "\n").joined(separator: " | ") } ?? "no log"
    }

    private func isRunning(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    // MARK: Running

    /// Runs `command` in the session and stops the session when it ends, or when this
    /// process gets SIGINT, SIGTERM or SIGHUP. Returns the exit status to give.
    func run(_ command: [String]) -> Int32 {
        var environment = sessionEnvironment
        environment["SECURE_DICT_KEYRING_RUN"] = "1"
        let signals = [SIGINT, SIGTERM, SIGHUP]
        for number in signals { signal(number, SIG_IGN) }
        let outcome = Outcome()
        let sources = signals.map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { outcome.finish(128 + number, signal: number) }
            source.resume()
            return source
        }
        switch Spawn.start(command[0], Array(command.dropFirst()), environment: environment, searchPath: true) {
        case .failure(let code):
            printError("cannot run \(command[0]): \(String(cString: strerror(code)))")
            outcome.finish(code == ENOENT ? 127 : 126, signal: nil)
        case .success(let pid):
            DispatchQueue.global().async {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                let signaled = status & 0x7f
                outcome.finish(signaled == 0 ? (status >> 8) & 0xff : 128 + signaled, signal: nil)
            }
        }
        let (status, signal) = outcome.wait()
        if let signal {
            printNote("secure-dict keyring run: got signal \(signal), stopping the session")
        }
        stop()
        for source in sources { source.cancel() }
        return status
    }

    /// Stops every process of the session, then removes its folder (not a `--keep` folder).
    func stop() {
        Self.stopProcesses(runtime: runtime, also: children)
        for child in children {
            var status: Int32 = 0
            waitpid(child, &status, WNOHANG)
        }
        if watchdogPipe >= 0 { close(watchdogPipe) }  // the watchdog ends too
        if keepLock >= 0 { close(keepLock) }
        try? FileManager.default.removeItem(atPath: base)
    }

    /// SIGCONT (a frozen process acts on nothing else) and SIGTERM to every process that
    /// carries `XDG_RUNTIME_DIR=runtime` (and to `also`), SIGKILL to those left 3 s later.
    ///
    /// `/proc` is scanned again on every round until two scans in a row, 50 ms apart, find
    /// nothing: one scan misses a process that a session process forks after it, and one
    /// whose `execve` is under way (its environment reads as empty until the new program's
    /// stack is set up). Such a survivor kept `keyring run`'s standard output open, so that
    /// its caller waited for the end of that output (a CI run lost a test's output this way).
    static func stopProcesses(runtime: String, also: [pid_t] = []) {
        var signaled = Set<pid_t>()
        var emptyScans = 0
        let termination = ContinuousClock.now.advanced(by: .seconds(3))
        let giveUp = termination.advanced(by: .seconds(2))
        var extra = also.filter { kill($0, 0) == 0 }
        while emptyScans < 2, ContinuousClock.now < giveUp {
            var found = Set(sessionProcesses(runtime: runtime) + extra)
            found.remove(getpid())
            for pid in found {
                var status: Int32 = 0
                waitpid(pid, &status, WNOHANG)  // our own children: reap them
            }
            found = found.filter { isAlive($0) }
            extra = extra.filter { found.contains($0) }
            let late = ContinuousClock.now >= termination
            for pid in found where late || !signaled.contains(pid) {
                kill(pid, SIGCONT)
                kill(pid, late ? SIGKILL : SIGTERM)
            }
            signaled.formUnion(found)
            emptyScans = found.isEmpty ? emptyScans + 1 : 0
            usleep(50_000)
        }
    }

    /// A process that exists and is no zombie.
    private static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0, let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return false }
        let text = String(decoding: stat, as: UTF8.self)
        guard let close = text.lastIndex(of: ")") else { return false }
        return !text[close...].hasPrefix(") Z")
    }

    /// The pids of this user's processes whose environment holds `XDG_RUNTIME_DIR=runtime`.
    static func sessionProcesses(runtime: String) -> [pid_t] {
        let marker = Array("XDG_RUNTIME_DIR=\(runtime)".utf8)
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> pid_t? in
            guard let pid = pid_t(entry), pid != getpid(),
                let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ")
            else { return nil }
            let found = environ.split(separator: 0, omittingEmptySubsequences: true).contains { $0.elementsEqual(marker) }
            return found ? pid : nil
        }
    }

    /// The first end of the run: COMMAND's exit or a signal.
    private final class Outcome: Sendable {
        private let result = Mutex<(status: Int32, signal: Int32?)?>(nil)
        private let done = DispatchSemaphore(value: 0)

        func finish(_ status: Int32, signal: Int32?) {
            let first = result.withLock { result in
                guard result == nil else { return false }
                result = (status, signal)
                return true
            }
            if first { done.signal() }
        }

        func wait() -> (status: Int32, signal: Int32?) {
            done.wait()
            return result.withLock { $0! }
        }
    }
}

/// `posix_spawn(3)` for `keyring run`: the program's standard input from a descriptor (or
/// inherited), its output to a file (or inherited, with every other descriptor), default
/// signal handling, and optionally a session of its own.
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

    static func start(
        _ program: String, _ arguments: [String], environment: [String: String], standardInput: Int32? = nil,
        output: String? = nil, newSession: Bool = false, searchPath: Bool = false
    ) -> Result {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput {
            posix_spawn_file_actions_adddup2(&actions, standardInput, STDIN_FILENO)
        } else if output != nil {
            posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        }
        var inherited: [Int32] = []
        if let output {
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO)
            // A daemon keeps no descriptor of ours: a caller's pipe would never see its end.
            inherited = closeOnExec()
        }
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
