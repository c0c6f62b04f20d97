import FoundationEssentials
import Glibc
import ProcessSpawning

/// The watchdog of a `keyring run` session, as `keyring run` sees it: a process of this tool
/// (`secure-dict keyring watchdog`, in a session of its own, so that a terminal's signals and
/// a kill of the caller's process group spare it) that makes the session's folder, reports
/// it, and then waits for the end of a pipe that only `keyring run` holds. At that end (a
/// normal stop, or `keyring run` killed, even by SIGKILL), it stops the session's processes
/// (``SessionProcesses``) and removes the folder.
struct SessionWatchdog {
    let pid: pid_t
    /// The session's folder, which the watchdog made.
    let base: String
    /// The write end of the pipe whose end tells the watchdog to stop the session.
    private let pipe: Int32

    /// Starts the watchdog, which makes the session's folder in `parent`.
    static func start(in parent: String) throws(PrivateKeyringSession.Failure) -> SessionWatchdog {
        guard let input = try? Spawn.pipe() else { throw .init(message: "cannot make a pipe") }
        guard let output = try? Spawn.pipe() else {
            for end in [input.read, input.write] { close(end) }
            throw .init(message: "cannot make a pipe")
        }
        // No descriptor of ours: a caller's pipe would never see its end.
        let spawned = try? Spawn.start(
            "/proc/self/exe", ["keyring", "watchdog", "--parent", parent, "--runner", String(getpid())],
            environment: ProcessInfo.processInfo.environment, standardInput: .descriptor(input.read),
            standardOutput: .descriptor(output.write), standardError: .null, keepsOtherDescriptors: false, newSession: true)
        close(input.read)
        close(output.write)
        guard let pid = spawned else {
            close(input.write)
            close(output.read)
            throw .init(message: "cannot start this tool's watchdog (/proc/self/exe)")
        }
        let line = readLine(output.read)
        close(output.read)
        guard line.hasPrefix("/") else {
            close(input.write)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            throw .init(message: "cannot make a folder in \(parent): \(line.isEmpty ? "the watchdog ended" : line)")
        }
        return SessionWatchdog(pid: pid, base: line, pipe: input.write)
    }

    /// Ends the watchdog's wait: it stops what is left of the session and removes its folder.
    func release() { close(pipe) }

    /// The first line `descriptor` gives, without its line break.
    private static func readLine(_ descriptor: Int32) -> String {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let got = read(descriptor, &byte, 1)
            if got < 0 && errno == EINTR { continue }
            guard got == 1, byte != UInt8(ascii: "\n") else { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The watchdog's own work (`secure-dict keyring watchdog`): makes the session's folder in
    /// `parent` and prints it, then, until its standard input ends, notes every quarter
    /// second the children of `runner` (the `keyring run` process, its parent); then stops
    /// the session: what carries its XDG_RUNTIME_DIR, those children and their descendants.
    static func watch(parent: String, runner: pid_t) {
        signal(SIGPIPE, SIG_IGN)  // keyring run may be gone before it reads the folder
        var template = Array("\(parent)/sd-keyring.XXXXXX".utf8CString)
        guard getppid() == runner, let made = mkdtemp(&template) else {
            let reason = getppid() == runner ? String(cString: strerror(errno)) : "keyring run ended"
            _ = Data("! \(reason)\n".utf8).withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            return
        }
        let base = String(cString: made)
        _ = Data("\(base)\n".utf8).withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        let null = open("/dev/null", O_WRONLY)
        dup2(null, STDOUT_FILENO)
        close(null)
        var known: [ProcessIdentity] = []
        var poller = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&poller, 1, 250)
            if ready > 0 {
                var byte: UInt8 = 0
                let got = read(STDIN_FILENO, &byte, 1)
                if got == 0 || (got < 0 && errno != EINTR) { break }
            } else if ready < 0 {
                if errno != EINTR { break }
            } else if getppid() == runner {
                // Only while it runs: once it is gone, its pid may be another process's.
                known = SessionProcesses.children(of: runner).filter { $0 != getpid() }.compactMap(ProcessIdentity.init(pid:))
            }
        }
        SessionProcesses.stop(runtime: "\(base)/runtime", roots: known)
        try? FileManager.default.removeItem(atPath: base)
    }
}
