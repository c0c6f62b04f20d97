import Foundation
import SecureDictionaryTestSupport
import Testing

/// What `exec` keeps from COMMAND, found by an adversarial run: the tool's own secret sources
/// (the passphrase's descriptor opened every dictionary of the folder), variables a
/// dictionary's keys choose outside the prefix's namespace (`PATH` from `P` and `ATH`), and a
/// value the kernel cannot pass, which failed as "sh cannot be run: Argument list too long".
extension ExecCommand {
    /// `sh -c 'exec 3<PASSPHRASE 4<MINE; exec secure-dict ARGUMENTS'`: descriptor 3 for the
    /// tool's passphrase, 4 for COMMAND.
    func withDescriptors(passphrase: String, mine: String, _ arguments: [String]) throws -> CLIHarness.Output {
        try CLIHarness.run(
            "/bin/sh", ["-c", #"exec 3<"$0" 4<"$1"; shift; exec "$@""#, passphrase, mine, CLIHarness.binary] + arguments,
            environment: ProcessInfo.processInfo.environment)
    }

    @Test func thePassphrasesDescriptorIsClosedAndTheUsersStays() throws {
        let passphrase = "\(folder)/passphrase"
        let mine = "\(folder)/mine"
        try Data("pw-\(UUID().uuidString)\n".utf8).write(to: URL(fileURLWithPath: passphrase))
        try Data("for COMMAND\n".utf8).write(to: URL(fileURLWithPath: mine))
        let store = ["--store", "passphrase", "--folder", "\(folder)/files", "--passphrase-fd", "3"]
        let written = try withDescriptors(passphrase: passphrase, mine: mine, ["write", "--app", app.id] + store + ["k", "v"])
        #expect(written.status == 0, "\(written)")
        let (command, file) = reportCommand("descriptors")
        let output = try withDescriptors(
            passphrase: passphrase, mine: mine, ["exec", "--app", app.id] + store + ["--env", "K=k", "--"] + command)
        #expect(output.succeeded, "\(output)")
        // The control: the same shell runs the reporter itself.
        let (controlCommand, control) = reportCommand("descriptors-control")
        let direct = try CLIHarness.run(
            "/bin/sh", ["-c", #"exec 3<"$0" 4<"$1"; shift; exec "$@""#, passphrase, mine] + controlCommand,
            environment: ProcessInfo.processInfo.environment)
        #expect(direct.succeeded, "\(direct)")
        let report = try report(file)
        let given = try self.report(control).fds
        #expect(given["3"] == passphrase && given["4"] == mine, "\(given)")
        #expect(report.fds["3"] == nil, "COMMAND got the passphrase's descriptor: \(report.fds)")
        #expect(report.fds["4"] == mine, "COMMAND lost the descriptor given for it: \(report.fds)")
        #expect(report.fds == given.filter { $0.key != "3" }, "descriptors: \(report.fds), given \(given)")
        #expect(try report.variables["K"] == Self.digest("v"))
    }

    @Test func aPassphraseOnStandardInputLeavesCOMMANDAnEmptyOne() throws {
        let store = ["--store", "passphrase", "--folder", "\(folder)/files", "--passphrase-fd", "0"]
        let passphrase = Data("pw-\(UUID().uuidString)\nmore of the file\n".utf8)
        let written = try CLIHarness.cli(["write", "--app", app.id] + store + ["k", "v"], input: passphrase)
        #expect(written.status == 0, "\(written)")
        let output = try CLIHarness.cli(
            ["exec", "--app", app.id] + store + ["--env", "K=k", "--", "/bin/sh", "-c", "wc -c"], input: passphrase)
        #expect(output.status == 0 && output.trimmedText == "0", "COMMAND read the passphrase's input: \(output)")
    }

    @Test func aKeyCannotMakeAVariableOutsideThePrefixsNamespace() throws {
        try write("ATH", "/tmp/evil", name: "namespace")
        try write("host", "db.example", name: "namespace")
        let marker = "\(folder)/ran"
        let run = ["--", "/bin/sh", "-c", "touch \"\(marker)\""]
        for prefix in ["P", "PY", "L"] {
            let output = try exec(["--name", "namespace", "--all-with-prefix", prefix] + run)
            #expect(output.status == 64, "\(prefix): \(output)")
            #expect(output.stderr.contains("key 'ATH' would be \(prefix)ATH"), "\(prefix): \(output.stderr)")
            #expect(output.stderr.contains("--all-with-prefix \(prefix)_"), "\(prefix): \(output.stderr)")
            #expect(!output.stderr.contains("/tmp/evil") && !output.stderr.contains("db.example"))
        }
        #expect(!FileManager.default.fileExists(atPath: marker), "the command ran")
        // The namespace with its '_': every key inside it; and --env stays the user's choice.
        let (command, file) = reportCommand("namespace")
        let output = try exec(["--name", "namespace", "--all-with-prefix", "P_", "--env", "PGHOST=host", "--"] + command)
        #expect(output.succeeded, "\(output)")
        let report = try report(file)
        #expect(
            try report.variables["P_ATH"] == Self.digest("/tmp/evil") && report.variables["PGHOST"] == Self.digest("db.example"))
        #expect(try report.variables["PATH"] != Self.digest("/tmp/evil"))
    }

    @Test func aValueOverTheKernelsLimitForOneVariableStopsBeforeAnythingRuns() throws {
        // "BIG=" (4 bytes), the value and the NUL: one byte over 131,072.
        let value = String(repeating: "x", count: 131_072 - 4)
        try write("big", value)
        try write("fits", String(repeating: "y", count: 131_072 - 6))
        let marker = "\(folder)/ran"
        let output = try exec(["--env", "BIG=big", "--", "/bin/sh", "-c", "touch \"\(marker)\""])
        #expect(output.status == 64, "\(output.how) \(output.stderr)")
        #expect(output.stderr.contains("BIG (key 'big') would take 131073 bytes"), "\(output.stderr)")
        #expect(output.stderr.contains("131072") && !output.stderr.contains("cannot be run"), "\(output.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the command ran")
        expectNothingShown(output, of: [value])
        // One byte less runs.
        let fits = try exec(["--env", "BIG=fits", "--", "/bin/sh", "-c", "touch \"\(marker)\""])
        #expect(fits.succeeded, "\(fits.how) \(fits.stderr)")
    }

    @Test func anEnvironmentOverTheKernelsTotalStopsBeforeAnythingRuns() throws {
        // Under 'ulimit -s 2048' the kernel takes 512 KiB of arguments and environment in all:
        // 5 values of 120,000 bytes do not fit, each one alone does.
        let chunk = String(repeating: "z", count: 120_000)
        for index in 0..<5 { try write("v\(index)", chunk, name: "large") }
        let marker = "\(folder)/ran"
        let output = try CLIHarness.run(
            "/bin/sh",
            [
                "-c", #"ulimit -s 2048 && exec "$@""#, "sh", CLIHarness.binary, "exec", "--app", app.id, "--name", "large",
                "--all-with-prefix", "V_", "--", "/bin/sh", "-c", "touch \"\(marker)\"",
            ], environment: ProcessInfo.processInfo.environment)
        #expect(output.status == 64, "\(output.how) \(output.stderr)")
        #expect(output.stderr.contains("more than the 524288 bytes") && output.stderr.contains("ulimit -s"), "\(output.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the command ran")
        expectNothingShown(output, of: [chunk])
    }
}
