import CSecretShim
import Dispatch
import FoundationEssentials
import Glibc
import ProcessSpawning
import SecureDictionary
import Synchronization

/// A private D-Bus session bus with an unlocked gnome-keyring on it, for `secure-dict
/// keyring run`: what the repository's `scripts/with-private-keyring` does, in the tool.
///
/// ```swift
/// let session = try PrivateKeyringSession.start(keep: nil, timeout: .seconds(10))
/// let status = session.run(["swift", "test"])     // stops everything, returns COMMAND's status
/// ```
///
/// What belongs to the session, and how it is stopped, is in ``SessionProcesses``: by this
/// process when COMMAND ends or a signal comes, and by a watchdog process (`secure-dict
/// keyring watchdog`, in a session of its own) when this process dies without a word, even
/// by SIGKILL: it waits for the end of a pipe only this process holds. The watchdog starts
/// first and makes the session's folder itself, so nothing of the session exists that it
/// does not watch (a run killed in its first milliseconds leaves no bus and no folder).
final class PrivateKeyringSession {
    struct Failure: Error {
        let message: String
    }

    /// Folders: `base` (removed at the end) holds `runtime` and `control`; the keyring's own
    /// files live in `state` (in `base`, or the `--keep` folder's private subfolder).
    let base: String
    let runtime: String
    let state: String
    let busAddress: String
    private let kept: KeptKeyringFolder?
    private let watchdog: SessionWatchdog
    private var children: [pid_t] = []
    private var keepLock: Int32 = -1

    private init(watchdog: SessionWatchdog, kept: KeptKeyringFolder?) {
        self.watchdog = watchdog
        self.kept = kept
        base = watchdog.base
        runtime = "\(base)/runtime"
        state = kept?.path ?? "\(base)/state"
        busAddress = "unix:path=\(base)/runtime/bus"
    }

    /// The tools, found in `PATH`, or what to install.
    private static func tool(_ name: String, package: String) throws(Failure) -> String {
        if let path = Spawn.candidates(for: name).first(where: { access($0, X_OK) == 0 }) { return path }
        throw Failure(
            message: "\(name) is not installed: install \(package) (Debian, Ubuntu: sudo apt-get install gnome-keyring dbus; "
                + "Fedora: sudo dnf install gnome-keyring dbus-daemon)")
    }

    /// Starts the watchdog (which makes the session's folder), the bus and the keyring, and
    /// waits until its default collection is unlocked.
    static func start(keep: String?, timeout: Duration) throws(Failure) -> PrivateKeyringSession {
        let busDaemon = try tool("dbus-daemon", package: "dbus")
        let keyringDaemon = try tool("gnome-keyring-daemon", package: "gnome-keyring")
        // Orphans of the session become this process's children, not init's, whatever their
        // environment: stopped with the session (SessionProcesses).
        _ = sd_process_prctl(PR_SET_CHILD_SUBREAPER, 1)
        // A short base path: unix socket paths must stay under 108 bytes.
        let parent = (ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.count <= 60 ? $0 : nil }) ?? "/tmp"
        let session = PrivateKeyringSession(
            watchdog: try SessionWatchdog.start(in: parent), kept: keep.map(KeptKeyringFolder.init))
        do throws(Failure) {
            try session.prepareFolders()
            try session.startBus(busDaemon, timeout: timeout)
            try session.startKeyring(keyringDaemon, timeout: timeout)
            session.kept?.announce(busAddress: session.busAddress)
        } catch {
            session.stop()
            throw error
        }
        return session
    }

    // MARK: Starting

    private func prepareFolders() throws(Failure) {
        if let kept {
            try kept.prepare()
            keepLock = try kept.lock()
        }
        for folder in [runtime, "\(base)/control", state, "\(state)/data", "\(state)/config", "\(state)/cache"] {
            if mkdir(folder, 0o700) != 0 && errno != EEXIST {
                throw Failure(message: "cannot make \(folder): \(String(cString: strerror(errno)))")
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

    private func startKeyring(_ daemon: String, timeout: Duration) throws(Failure) {
        let password = try self.password()
        guard let ends = try? Spawn.pipe() else { throw Failure(message: "cannot make a pipe") }
        // --unlock reads the password to the end of its input: it unlocks, or on fresh
        // folders creates, the "login" collection, which becomes the default.
        let pid = try spawnDaemon(
            daemon, ["--foreground", "--unlock", "--components=secrets"], log: "gnome-keyring.log", input: ends.read)
        close(ends.read)
        _ = password.withUnsafeBytes { write(ends.write, $0.baseAddress, $0.count) }
        close(ends.write)
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

    /// The file that holds the keyring's password: given to COMMAND as
    /// `$SECURE_DICT_KEYRING_PASSWORD_FILE`, to unlock the keyring after locking it in a test.
    var passwordFile: String { "\(state)/keyring-password" }

    /// A new random password, or the one kept with `--keep` (made on the first run).
    private func password() throws(Failure) -> [UInt8] {
        let file = passwordFile
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
        // Its output to its log, and no descriptor of ours: a caller's pipe would never see its end.
        do {
            let pid = try Spawn.start(
                program, arguments, environment: environment, standardInput: input.map { .descriptor($0) } ?? .null,
                standardOutput: .file("\(base)/control/\(log)"), standardError: .standardOutput,
                keepsOtherDescriptors: false)
            children.append(pid)
            return pid
        } catch {
            throw Failure(message: "cannot start \(program): \(error)")
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
        environment["SECURE_DICT_KEYRING_PASSWORD_FILE"] = passwordFile
        let signals = [SIGINT, SIGTERM, SIGHUP]
        for number in signals { signal(number, SIG_IGN) }
        let outcome = OneShot<RunEnd>()  // the first end of the run: COMMAND's exit or a signal
        let sources = signals.map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { outcome.finish(RunEnd(status: 128 + number, signal: number)) }
            source.resume()
            return source
        }
        // COMMAND inherits every descriptor, as under `env` (`--passphrase-fd 3`).
        do {
            let pid = try Spawn.start(command[0], Array(command.dropFirst()), environment: environment, searchesPath: true)
            // As a subreaper this process is the parent of every orphan of the session: reap
            // them all, and note COMMAND's status.
            DispatchQueue.global().async {
                while true {
                    var status: Int32 = 0
                    let ended = waitpid(-1, &status, 0)
                    if ended < 0 {
                        if errno == EINTR { continue }
                        return
                    }
                    guard ended == pid else { continue }
                    let signaled = status & 0x7f
                    outcome.finish(RunEnd(status: signaled == 0 ? (status >> 8) & 0xff : 128 + signaled, signal: nil))
                }
            }
        } catch {
            printError("cannot run \(command[0]): \(error)")
            outcome.finish(RunEnd(status: error.code == ENOENT ? 127 : 126, signal: nil))
        }
        let end = outcome.wait()
        if let signal = end.signal {
            printNote("secure-dict keyring run: got signal \(signal), stopping the session")
        }
        stop()
        for source in sources { source.cancel() }
        return end.status
    }

    /// Stops every process of the session, then removes its folder (not a `--keep` folder).
    func stop() {
        SessionProcesses.stop(
            runtime: runtime, also: children, roots: ProcessIdentity(pid: getpid()).map { [$0] } ?? [],
            sparing: [watchdog.pid])
        for child in children {
            var status: Int32 = 0
            waitpid(child, &status, WNOHANG)
        }
        kept?.forget()
        watchdog.release()  // it ends too
        if keepLock >= 0 { close(keepLock) }
        try? FileManager.default.removeItem(atPath: base)
    }

    /// How the run ended: COMMAND's exit status, or the signal that ended it.
    private struct RunEnd: Sendable {
        let status: Int32
        let signal: Int32?
    }
}
