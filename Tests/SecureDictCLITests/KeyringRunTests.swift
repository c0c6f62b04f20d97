import Foundation
import SecureDictionaryTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `secure-dict keyring run -- COMMAND`, a private keyring in one command
/// for users' CI, from a clean environment (`env -i`): no bus, no keyring, no desktop of the
/// test's own. Needs no outer keyring; runs once, with gnome-keyring.
@Suite(
    .serialized,
    .enabled(if: !PrivateKeyring.available || PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct KeyringRun {
    let home: String

    init() throws {
        home = try TemporaryFolder.create("sd-run")
    }

    /// The folder of the built secure-dict, first in `PATH`.
    static var binaries: String { URL(fileURLWithPath: CLIHarness.binary).deletingLastPathComponent().path }

    /// `env -i PATH=… HOME=… secure-dict ARGUMENTS`.
    func clean(_ arguments: [String], path: String? = nil, timeout: Duration = .seconds(120)) throws -> ChildProcess.Output {
        try ChildProcess.run(
            "/usr/bin/env",
            ["-i", "PATH=\(path ?? "\(Self.binaries):/usr/bin:/bin")", "HOME=\(home)", CLIHarness.binary] + arguments,
            timeout: timeout)
    }

    /// Starts `env -i PATH=… HOME=… [extra…] secure-dict ARGUMENTS` in the background, its
    /// output to /dev/null; returns its pid (wait for it with `waitpid`).
    func start(_ arguments: [String], extra: [String] = []) throws -> pid_t {
        try Spawn.start(
            "/usr/bin/env",
            ["-i", "PATH=\(Self.binaries):/usr/bin:/bin", "HOME=\(home)"] + extra + [CLIHarness.binary] + arguments,
            environment: [:], standardInput: .null, standardOutput: .null, standardError: .null)
    }

    /// Kills `pid` (SIGKILL) and reaps it.
    static func killAndReap(_ pid: pid_t) {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }

    /// The processes whose environment holds `XDG_RUNTIME_DIR=runtime`.
    static func processes(of runtime: String) -> [String] {
        let marker = Data("XDG_RUNTIME_DIR=\(runtime)\0".utf8)
        return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { entry in
            guard Int32(entry) != nil, let environ = FileManager.default.contents(atPath: "/proc/\(entry)/environ") else {
                return false
            }
            return environ.range(of: marker) != nil
        }
    }

    /// 20 runs in a row: each starts its own bus and keyring, the command writes and reads a
    /// value with secure-dict, leaves a process running in the background and exits 7; the
    /// exit code comes through, and nothing of the session is left: no process, no folder.
    @Test func twentyRunsFromACleanEnvironmentPassTheExitCodeAndLeaveNothing() throws {
        let start = ContinuousClock.now
        for round in 1...20 {
            let app = "ci.run.\(UUID().uuidString)"
            let script =
                "secure-dict write --app \(app) token v\(round) && secure-dict read --app \(app) token && "
                + "echo \"runtime=$XDG_RUNTIME_DIR\"; sleep 300 & exit 7"
            let output = try clean(["keyring", "run", "--", "sh", "-c", script])
            #expect(output.status == 7 && !output.signaled, "round \(round): \(output)")
            let lines = output.text.split(separator: "\n").map(String.init)
            #expect(lines.first == "v\(round)", "round \(round): \(output)")
            let runtime = try #require(lines.first { $0.hasPrefix("runtime=") }.map { String($0.dropFirst(8)) })
            #expect(runtime.hasPrefix("/tmp/sd-keyring."), "\(runtime)")
            #expect(Self.processes(of: runtime).isEmpty, "round \(round): left running: \(Self.processes(of: runtime))")
            #expect(!FileManager.default.fileExists(atPath: URL(fileURLWithPath: runtime).deletingLastPathComponent().path))
        }
        let elapsed = ContinuousClock.now - start
        print("keyring run: 20 runs in \(elapsed)")
    }

    @Test func theCommandsStatusAndSignalComeThrough() throws {
        #expect(try clean(["keyring", "run", "--", "true"]).status == 0)
        #expect(try clean(["keyring", "run", "--", "sh", "-c", "exit 42"]).status == 42)
        #expect(try clean(["keyring", "run", "--", "sh", "-c", "kill -TERM $$"]).status == 143)
        let missing = try clean(["keyring", "run", "--", "no-such-command-\(UUID().uuidString)"])
        #expect(missing.status == 127 && missing.stderr.contains("cannot run"), "\(missing)")
        let bare = try clean(["keyring", "run"])
        #expect(bare.status == 64 && bare.stderr.contains("Missing COMMAND"), "\(bare)")
    }

    /// COMMAND gets every descriptor `keyring run` was given, as under `env`: a test inside can
    /// hand a passphrase over with `--passphrase-fd 3`. (swift-subprocess closes every
    /// descriptor above 2 in the child, so the tool starts COMMAND with its own helper.)
    @Test func theCommandGetsTheDescriptorsKeyringRunWasGiven() throws {
        let file = "\(home)/passphrase"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("open sesame\n".utf8)))
        let output = try ChildProcess.run(
            "/usr/bin/env",
            [
                "-i", "PATH=\(Self.binaries):/usr/bin:/bin", "HOME=\(home)", "/bin/sh", "-c",
                "exec 3<\"$1\"; exec secure-dict keyring run -- sh -c 'cat <&3'", "sh", file,
            ],
            timeout: .seconds(120))
        #expect(output.status == 0 && output.text == "open sesame\n", "\(output)")
    }

    /// Before: without `--`, `keyring run swift --version` printed secure-dict's version
    /// and exited 0 without running anything (a CI step would count it a pass), and
    /// `keyring run swift test` said "Missing COMMAND". The command runs, with its options.
    @Test func theCommandNeedsNoDoubleDash() throws {
        let version = try clean(["keyring", "run", "printf", "%s\\n", "--version"])
        #expect(version.status == 0 && version.text == "--version\n", "\(version)")
        let help = try clean(["keyring", "run", "--timeout", "20", "sh", "-c", "echo \"$0 $1\"; exit 3", "test", "--help"])
        #expect(help.status == 3 && help.text == "test --help\n", "\(help)")
    }

    @Test func keepKeepsTheKeyringForTheNextRun() throws {
        let keep = "\(home)/kept"
        let app = "ci.keep.\(UUID().uuidString)"
        let write = try clean(["keyring", "run", "--keep", keep, "--", "secure-dict", "write", "--app", app, "token", "kept"])
        #expect(write.status == 0, "\(write)")
        let read = try clean(["keyring", "run", "--keep", keep, "--", "secure-dict", "read", "--app", app, "token"])
        #expect(read.status == 0 && read.trimmedText == "kept", "\(read)")
        // A folder it made is private; the keyring and its password are in a private subfolder.
        #expect(Self.mode(keep) == 0o700)
        #expect(Self.mode("\(keep)/secure-dict-keyring") == 0o700)
        #expect(Self.mode("\(keep)/secure-dict-keyring/keyring-password") == 0o600)
    }

    static func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int
    }

    /// Before: `--keep DIR` on an existing folder changed its mode to 0700 (a 1777 folder
    /// lost its mode) and put the keyring's password in it. The folder given is never
    /// changed: the keyring lives in a private subfolder.
    @Test func keepNeverChangesTheFolderItIsGiven() throws {
        for mode in [0o1777, 0o755] {
            let keep = "\(home)/given-\(String(mode, radix: 8))"
            try FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: false)
            chmod(keep, mode_t(mode))
            let run = try clean(["keyring", "run", "--keep", keep, "--", "secure-dict", "write", "--app", "ci.keep", "k", "v"])
            #expect(run.status == 0, "\(run)")
            #expect(Self.mode(keep) == mode, "\(String(Self.mode(keep) ?? 0, radix: 8))")
            #expect(try FileManager.default.contentsOfDirectory(atPath: keep) == ["secure-dict-keyring"])
            #expect(Self.mode("\(keep)/secure-dict-keyring/keyring-password") == 0o600)
        }
    }

    /// Processes whose environment or command line names `folder`.
    static func processes(naming folder: String) -> [String] {
        let needle = Data(folder.utf8)
        return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { entry in
            guard Int32(entry) != nil, Int32(entry) != getpid() else { return false }
            return ["environ", "cmdline"].contains { file in
                FileManager.default.contents(atPath: "/proc/\(entry)/\(file)")?.range(of: needle) != nil
            }
        }
    }

    /// Waits (up to 15 s) until `done` holds; returns whether it did.
    static func eventually(_ done: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(15)
        while !done() {
            guard ContinuousClock.now < deadline else { return false }
            usleep(50_000)
        }
        return true
    }

    /// Before: killed with SIGKILL in its first ~60 ms, `keyring run` left its private
    /// dbus-daemon running and its folder behind (13 of 40 kills between 14 and 58 ms): its
    /// watchdog started after the bus. Killed at every moment of its first 100 ms, it leaves
    /// nothing: no process, no folder.
    @Test func aRunKilledInItsFirstMomentsLeavesNothing() throws {
        let temporary = "\(home)/t"
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: false)
        for round in 0..<20 {
            let run = try start(["keyring", "run", "--", "sleep", "300"], extra: ["TMPDIR=\(temporary)"])
            usleep(useconds_t(round * 5_000))  // the moment of the kill, not a wait for something
            Self.killAndReap(run)
            let clean = Self.eventually {
                Self.processes(naming: temporary).isEmpty
                    && (try? FileManager.default.contentsOfDirectory(atPath: temporary))?.isEmpty == true
            }
            let folders = (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []
            #expect(clean, "killed after \(round * 5) ms: left \(Self.processes(naming: temporary)) and \(folders)")
        }
    }

    /// Before: a child that drops the session's XDG_RUNTIME_DIR (`env -i`, `env -u`)
    /// survived the run and held its output open (12.1 s for a `sleep 12 &`). It is stopped
    /// with the session: when the command ends, and when `keyring run` itself is killed.
    @Test func aChildThatDropsTheSessionsEnvironmentIsStoppedToo() throws {
        let pids = "\(home)/pids"
        let script = "env -i sleep 3001 & echo $! > \(pids); env -u XDG_RUNTIME_DIR sleep 3002 & echo $! >> \(pids)"
        let output = try clean(["keyring", "run", "--", "sh", "-c", script], timeout: .seconds(30))
        #expect(output.status == 0 && !output.timedOut, "\(output)")
        let left = try String(contentsOfFile: pids, encoding: .utf8).split(separator: "\n").compactMap { pid_t($0) }
        #expect(left.count == 2)
        #expect(Self.eventually { left.allSatisfy { kill($0, 0) != 0 } }, "left running: \(left)")
        for pid in left { kill(pid, SIGKILL) }  // whatever the outcome, nothing of the test stays

        // Killed: its watchdog stops such a child too.
        let killed = "\(home)/killed-pid"
        let run = try start([
            "keyring", "run", "--", "sh", "-c",
            "env -i sleep 3003 </dev/null >/dev/null 2>&1 & echo $! > \(killed).new && mv \(killed).new \(killed); sleep 300",
        ])
        #expect(Self.eventually { FileManager.default.fileExists(atPath: killed) })
        let child = try #require(
            pid_t(try String(contentsOfFile: killed, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        Self.killAndReap(run)
        #expect(Self.eventually { kill(child, 0) != 0 }, "left running after SIGKILL: \(child)")
        kill(child, SIGKILL)
    }

    /// Before: a second shell could not join a running `keyring run --keep DIR` ("in
    /// use", no hint). It is told the variable to export, and with it reaches that keyring.
    @Test func aSecondShellIsToldHowToJoinAKeptKeyring() throws {
        let keep = "\(home)/shared"
        try whileKept(keep) {
            let second = try clean(["keyring", "run", "--keep", keep, "--", "true"])
            #expect(second.status == 125, "\(second)")
            let address = try #require(
                second.stderr.firstMatch(of: /export DBUS_SESSION_BUS_ADDRESS=(\S+)/).map { String($0.1) }, "\(second)")
            let joined = try ChildProcess.run(
                "/usr/bin/env",
                [
                    "-i", "PATH=\(Self.binaries):/usr/bin:/bin", "HOME=\(home)", "DBUS_SESSION_BUS_ADDRESS=\(address)",
                    CLIHarness.binary, "write", "--app", "ci.join", "k", "joined",
                ])
            #expect(joined.status == 0, "\(joined)")
        }
    }

    /// Runs `body` while `keyring run --keep keep` is up, its command waiting; then lets the
    /// command end and reaps the run, whether `body` returned or threw.
    func whileKept(_ keep: String, _ body: () throws -> Void) throws {
        let (ready, done) = ("\(home)/ready", "\(home)/done")
        let run = try start([
            "keyring", "run", "--keep", keep, "--", "sh", "-c", "touch \(ready); while [ ! -e \(done) ]; do sleep 0.05; done",
        ])
        defer {
            _ = FileManager.default.createFile(atPath: done, contents: nil)
            var status: Int32 = 0
            while waitpid(run, &status, 0) < 0 && errno == EINTR {}
        }
        #expect(Self.eventually { FileManager.default.fileExists(atPath: ready) })
        try body()
    }

    /// Before: the keyring's password was shown nowhere without `--keep`; the command
    /// finds it in $SECURE_DICT_KEYRING_PASSWORD_FILE, to lock and unlock the keyring as
    /// the documentation shows (and as a locked keyring's error says).
    @Test func theCommandCanLockAndUnlockItsKeyring() throws {
        let script = """
            secure-dict write --app ci.lock k v >/dev/null || exit 10
            gdbus call --session --dest org.freedesktop.secrets --object-path /org/freedesktop/secrets \
                --method org.freedesktop.Secret.Service.Lock "['/org/freedesktop/secrets/aliases/default']" >/dev/null || exit 11
            secure-dict read --app ci.lock k 2>/dev/null; echo "locked=$?"
            gnome-keyring-daemon --replace --unlock --components=secrets < "$SECURE_DICT_KEYRING_PASSWORD_FILE" >/dev/null || exit 12
            gdbus wait --session --timeout 10 org.freedesktop.secrets || exit 13
            secure-dict read --app ci.lock k
            """
        let output = try clean(["keyring", "run", "--", "sh", "-c", script], timeout: .seconds(60))
        #expect(output.status == 0 && output.text == "locked=3\nv\n", "\(output)")
    }

    @Test func withoutGnomeKeyringItSaysWhatToInstall() throws {
        let bin = "\(home)/bin"
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(bin)/dbus-daemon", withDestinationPath: "/usr/bin/dbus-daemon")
        let output = try clean(["keyring", "run", "--", "true"], path: bin)
        #expect(output.status == 125, "\(output)")
        #expect(
            output.stderr.contains("gnome-keyring-daemon is not installed")
                && output.stderr.contains("apt-get install gnome-keyring"))
    }

    /// Killed with SIGKILL (no handler runs): its watchdog still stops the session.
    /// A process that the stop itself makes start another (here: a shell that starts one on
    /// SIGTERM) is found and stopped too: one scan of `/proc` missed it, and a survivor that
    /// holds `keyring run`'s output open made a CI run's caller lose that output.
    @Test func aProcessStartedWhileTheSessionStopsIsStoppedToo() throws {
        let script =
            "sh -c 'trap \"sleep 300 </dev/null >/dev/null 2>&1 & exit 0\" TERM; while :; do sleep 0.1; done' "
            + "</dev/null >/dev/null 2>&1 & echo \"runtime=$XDG_RUNTIME_DIR\"; sleep 0.3"
        let output = try clean(["keyring", "run", "--", "sh", "-c", script])
        #expect(output.succeeded, "\(output)")
        let runtime = try #require(
            output.text.split(separator: "\n").first { $0.hasPrefix("runtime=") }.map { String($0.dropFirst(8)) })
        #expect(Self.processes(of: runtime).isEmpty, "left running: \(Self.processes(of: runtime))")
    }

    @Test func aKilledRunLeavesNothingRunning() throws {
        let marker = "\(home)/runtime"
        let tool = try Spawn.start(
            "/usr/bin/env",
            [
                "-i", "PATH=\(Self.binaries):/usr/bin:/bin", "HOME=\(home)", CLIHarness.binary, "keyring", "run", "--", "sh",
                "-c",
                "echo \"$XDG_RUNTIME_DIR\" > \(marker); sleep 300",
            ], environment: ProcessInfo.processInfo.environment, standardInput: .null, standardOutput: .null,
            standardError: .null, keepsOtherDescriptors: false)
        var waited = 0
        while !FileManager.default.fileExists(atPath: marker) && waited < 300 {
            usleep(50_000)
            waited += 1
        }
        let runtime = try String(contentsOfFile: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!Self.processes(of: runtime).isEmpty)
        kill(tool, SIGKILL)
        while waitpid(tool, nil, 0) < 0 && errno == EINTR {}
        // The watchdog stops the processes (up to 3 s for SIGTERM), then removes the folder.
        let folder = URL(fileURLWithPath: runtime).deletingLastPathComponent().path
        var left = Self.processes(of: runtime)
        for _ in 0..<100 where !left.isEmpty || FileManager.default.fileExists(atPath: folder) {
            usleep(100_000)
            left = Self.processes(of: runtime)
        }
        #expect(left.isEmpty, "left running after SIGKILL: \(left)")
        #expect(!FileManager.default.fileExists(atPath: folder))
    }
}
