import Foundation
import SecureDictionaryTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// In a second shell joined to `keyring run --keep DIR` (its `DBUS_SESSION_BUS_ADDRESS`
/// exported, nothing else), `doctor`'s fix for the locked keyring started a keyring on the home
/// folder's files, after which the session's dictionaries were gone from view. The fix acts on
/// the session's own keyring.
extension KeyringRun {
    @Test func doctorsUnlockFixInAJoinedShellUnlocksTheSessionsOwnKeyring() throws {
        let keep = "\(home)/kept"
        // A keyring the fix started outside the session (the home folder's) is not stopped with
        // it: killed once the session has ended.
        defer { for pid in Self.processes(naming: home).compactMap({ pid_t($0) }) { kill(pid, SIGKILL) } }
        try whileKept(keep) {
            let address = try String(contentsOfFile: "\(keep)/secure-dict-keyring/running", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            // The second shell: its own HOME, the session's bus.
            let shell = ["PATH=\(Self.binaries):/usr/bin:/bin", "HOME=\(home)", "DBUS_SESSION_BUS_ADDRESS=\(address)"]
            func joined(_ arguments: [String], input: Data = Data()) throws -> ChildProcess.Output {
                try ChildProcess.run("/usr/bin/env", ["-i"] + shell + arguments, input: input, timeout: .seconds(60))
            }
            #expect(try joined([CLIHarness.binary, "write", "--app", "ci.kept", "k", "kept value"]).status == 0)
            let lock = try joined([
                "gdbus", "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.Lock", "['/org/freedesktop/secrets/aliases/default']",
            ])
            #expect(lock.status == 0, "\(lock)")
            let doctor = try joined([CLIHarness.binary, "doctor"])
            #expect(doctor.status == 3, "\(doctor)")
            let fix = try #require(
                doctor.text.firstMatch(of: /fix: unlock [^:\n]+ from this shell: ([^\n]+)/).map { String($0.1) }, "\(doctor)")
            // The command as a user pastes it; one that reads standard input is given the password.
            let command = fix.replacing(" (it reads the password on standard input)", with: "")
            let password = try Data(contentsOf: URL(fileURLWithPath: "\(keep)/secure-dict-keyring/keyring-password"))
            let unlocked = try joined(["/bin/sh", "-c", "\(command) >/dev/null"], input: password)
            #expect(unlocked.status == 0, "\(command): \(unlocked)")
            #expect(try joined(["gdbus", "wait", "--session", "--timeout", "10", "org.freedesktop.secrets"]).status == 0)
            let read = try joined([CLIHarness.binary, "read", "--app", "ci.kept", "k"])
            #expect(read.status == 0 && read.text == "kept value\n", "after '\(command)': \(read)")
            // And it runs in the session: stopped with it.
            #expect(command.contains("XDG_RUNTIME_DIR="), "\(command)")
        }
    }
}
