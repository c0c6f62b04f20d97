import Foundation
import SecureDictionaryTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 31, point 4: `secure-dict keyring run -- COMMAND`, a private keyring in one command
/// for users' CI, from a clean environment (`env -i`): no bus, no keyring, no desktop of the
/// test's own. Needs no outer keyring; runs once, with gnome-keyring.
@Suite(
    .serialized,
    .enabled(if: !PrivateKeyring.available || PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct KeyringRun {
    let home: String

    init() throws {
        home = FileManager.default.temporaryDirectory.appendingPathComponent("sd-run-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
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

    /// Issue 36.9: without `--`, `keyring run swift --version` printed secure-dict's version
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
        let attributes = try FileManager.default.attributesOfItem(atPath: keep)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        #expect(
            (try FileManager.default.attributesOfItem(atPath: "\(keep)/keyring-password")[.posixPermissions] as? Int) == 0o600)
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "-i", "PATH=\(Self.binaries):/usr/bin:/bin", "HOME=\(home)", CLIHarness.binary, "keyring", "run", "--", "sh", "-c",
            "echo \"$XDG_RUNTIME_DIR\" > \(marker); sleep 300",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var waited = 0
        while !FileManager.default.fileExists(atPath: marker) && waited < 300 {
            usleep(50_000)
            waited += 1
        }
        let runtime = try String(contentsOfFile: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!Self.processes(of: runtime).isEmpty)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
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
