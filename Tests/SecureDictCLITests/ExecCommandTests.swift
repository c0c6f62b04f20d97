import ArgumentParser
import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Testing

@testable import secure_dict

/// `secure-dict exec` gives a command the values of a dictionary in its
/// environment and shows them nowhere else; `read --keys` lists what there is. Against the
/// real provider. No value is ever printed in test output: the command under test writes a
/// report of SHA-256 digests, which the test compares with its own.
@Suite(.serialized, .enabled(if: CLIHarness.enabled, "needs the private keyring of scripts/with-private-keyring"))
struct ExecCommand {
    let app = TestApp()
    let folder: String

    init() throws {
        folder = try TemporaryFolder.create("sd-exec")
        try Data(Self.reporter.utf8).write(to: URL(fileURLWithPath: "\(folder)/report.py"))
    }

    /// A command that reports what it was started with: a digest of each environment
    /// variable, its command line, its ignored and blocked signals, its open descriptors.
    static let reporter = """
        import hashlib, json, os, sys
        fds = {}
        for name in os.listdir("/proc/self/fd"):
            if int(name) > 2:
                try: fds[name] = os.readlink("/proc/self/fd/" + name)
                except OSError: pass  # the listing's own descriptor, closed since
        # The signals of the shell that started it: python ignores SIGPIPE and SIGXFSZ itself.
        status = dict(line.split(":\\t", 1) for line in open(sys.argv[1] + ".status").read().splitlines() if ":\\t" in line)
        report = {
            "variables": {k.decode(): hashlib.sha256(v).hexdigest() for k, v in os.environb.items()},
            "cmdline": open("/proc/self/cmdline", "rb").read().hex(),
            "ignored": status["SigIgn"].strip(), "blocked": status["SigBlk"].strip(), "fds": fds,
        }
        json.dump(report, open(sys.argv[1], "w"))
        """

    struct Report: Decodable {
        let variables: [String: String]
        let cmdline: String
        let ignored: String
        let blocked: String
        let fds: [String: String]

        /// The command line's bytes.
        var commandLine: Data { Data(hexadecimal: cmdline) }
    }

    /// A command that reports to FILE: a shell notes its signals in FILE.status, then runs
    /// `python3 report.py FILE`.
    func reportCommand(_ name: String) -> (command: [String], file: String) {
        let file = "\(folder)/\(name).json"
        let script = #"grep '^Sig' /proc/self/status > "$0.status" && exec python3 "$1" "$0""#
        return (["/bin/sh", "-c", script, file, "\(folder)/report.py"], file)
    }

    func report(_ file: String) throws -> Report {
        try JSONDecoder().decode(Report.self, from: Data(contentsOf: URL(fileURLWithPath: file)))
    }

    /// SHA-256 of `text`, in hexadecimal, by `sha256sum` (the text on its standard input).
    static func digest(_ text: String) throws -> String {
        let output = try CLIHarness.run("sha256sum", [], input: Data(text.utf8))
        return String(output.text.prefix { $0 != " " })
    }

    /// Writes `value` under `key` through standard input, as a user keeps secrets off argv.
    func write(_ key: String, _ value: String, type: String = "string", name: String? = nil) throws {
        let named = name.map { ["--name", $0] } ?? []
        let output = try CLIHarness.cli(
            ["write", "--app", app.id] + named + [key, "-", "--type", type], input: Data(value.utf8))
        #expect(output.status == 0, "write \(key): \(output.how) \(output.stderr)")
    }

    /// `secure-dict exec --app ID ARGUMENTS`.
    func exec(_ arguments: [String], environment: [String: String] = [:]) throws -> CLIHarness.Output {
        try CLIHarness.cli(["exec", "--app", app.id] + arguments, environment: environment, timeout: .seconds(60))
    }

    /// Nothing of `secrets` in the tool's output.
    func expectNothingShown(_ output: CLIHarness.Output, of secrets: [String], sourceLocation: SourceLocation = #_sourceLocation)
    {
        for secret in secrets {
            let shown =
                output.stdout.range(of: Data(secret.utf8)) != nil || output.stderrBytes.range(of: Data(secret.utf8)) != nil
            #expect(!shown, "a value appeared in the output (\(output.how))", sourceLocation: sourceLocation)
        }
    }

    @Test func theCommandGetsEachValueAsTextAndNothingShowsIt() throws {
        let token = "tok-\(UUID().uuidString)"
        let multiline = "pässwörd \(UUID().uuidString)\nsecond line ="
        try write("apiToken", token)
        try write("db password", multiline)
        try write("retries", "3", type: "int")
        try write("ratio", "0.25", type: "real")
        try write("enabled", "yes", type: "bool")
        try write("since", "2026-11-22T05:57:00.25+02:00", type: "date")
        let (command, file) = reportCommand("values")
        let output = try exec(
            [
                "--env", "API_TOKEN=apiToken", "--env", "DB_PASSWORD=db password", "--env", "RETRIES=retries",
                "--env", "ratio=ratio", "--env", "_ENABLED=enabled", "--env", "SINCE=since", "--",
            ] + command)
        #expect(output.succeeded && output.stdout.isEmpty && output.stderr.isEmpty, "\(output.how) \(output.stderr)")
        expectNothingShown(output, of: [token, multiline])
        let report = try report(file)
        let expected = [
            "API_TOKEN": token, "DB_PASSWORD": multiline, "RETRIES": "3", "ratio": "0.25", "_ENABLED": "true",
            "SINCE": "2026-11-22T03:57:00.250Z",
        ]
        for (variable, text) in expected {
            #expect(try report.variables[variable] == Self.digest(text), "\(variable) is not the stored value as text")
        }
        // No value on the command's own command line (nor on the tool's: it held keys only).
        for secret in [token, multiline] {
            #expect(report.commandLine.range(of: Data(secret.utf8)) == nil, "a value is on the command's command line")
        }
    }

    @Test func theCommandStartsWithTheSignalsAndDescriptorsTheToolWasGiven() throws {
        try write("k", "v-\(UUID().uuidString)")
        let (command, file) = reportCommand("started")
        let (controlCommand, control) = reportCommand("control")
        // A shell that ignores SIGUSR1 and gives descriptor 3 runs the reporter directly (the
        // control), then through secure-dict: both must start alike.
        let script = """
            trap '' USR1
            exec 3<"$0"
            "$1" "$2" "$3" "$4" "$5" || exit 9
            shift 5
            exec "$@"
            """
        let output = try CLIHarness.run(
            "/bin/sh",
            ["-c", script, "\(folder)/report.py"] + controlCommand
                + [CLIHarness.binary, "exec", "--app", app.id, "--env", "K=k", "--"] + command,
            environment: ProcessInfo.processInfo.environment)
        #expect(output.succeeded, "\(output)")
        let direct = try report(control)
        let through = try report(file)
        // Signals 32 and 33 are glibc's own, for its threads: no program sets them (sigaction
        // refuses), and a process with threads, as secure-dict, handles them.
        let settable = ~UInt64(0x1_8000_0000)
        func mask(_ hex: String) -> UInt64 { (UInt64(hex, radix: 16) ?? .max) & settable }
        #expect(mask(direct.ignored) & (1 << (SIGUSR1 - 1)) != 0, "the control ignores SIGUSR1: \(direct.ignored)")
        #expect(mask(through.ignored) == mask(direct.ignored), "ignored signals: \(through.ignored), given \(direct.ignored)")
        #expect(mask(through.blocked) == mask(direct.blocked), "blocked signals: \(through.blocked), given \(direct.blocked)")
        #expect(direct.fds["3"] == "\(folder)/report.py")
        #expect(through.fds == direct.fds, "descriptors: \(through.fds), given \(direct.fds)")
    }

    @Test(arguments: [0, 3, 77])
    func theCommandsExitCodeIsTheToolsExitCode(_ code: Int) throws {
        try write("k", "v")
        let output = try exec(["--env", "K=k", "--", "/bin/sh", "-c", "exit \(code)"])
        #expect(!output.signaled && output.status == code, "\(output)")
    }

    @Test func aSignalThatEndsTheCommandEndsTheTool() throws {
        try write("k", "v")
        // The command kills itself: the caller sees the signal itself.
        let output = try exec(["--env", "K=k", "--", "/bin/sh", "-c", "kill -TERM $$"])
        #expect(output.signaled && output.status == SIGTERM, "\(output)")
        // A signal sent to the process the caller started reaches the command: it is that
        // process. The command says it runs through a FIFO, then waits to be killed.
        let fifo = "\(folder)/ready"
        #expect(mkfifo(fifo, 0o600) == 0)
        let script = """
            "$@" &
            started=$!
            read line < "\(fifo)"
            kill -TERM $started
            wait $started
            echo "status $?"
            """
        let caller = try CLIHarness.run(
            "/bin/sh",
            ["-c", script, "sh", CLIHarness.binary, "exec", "--app", app.id, "--env", "K=k", "--"]
                + ["/bin/sh", "-c", "echo ready > \"\(fifo)\"; exec sleep 60"],
            environment: ProcessInfo.processInfo.environment)
        #expect(caller.text == "status 143\n", "\(caller)")
    }

    @Test func aMissingKeyStopsBeforeTheCommandRunsAndNamesIt() throws {
        let token = "tok-\(UUID().uuidString)"
        try write("apiToken", token)
        let marker = "\(folder)/ran"
        let output = try exec([
            "--env", "API_TOKEN=apiToken", "--env", "SECRET=no-such-key", "--", "/bin/sh", "-c", "touch \"\(marker)\"",
        ])
        #expect(output.status == 1, "\(output)")
        #expect(output.stderr.contains("'no-such-key' (for SECRET)") && output.stderr.contains("--keys"), "\(output.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the command ran")
        expectNothingShown(output, of: [token])
        // No dictionary at all: the same, exit 1.
        let none = try CLIHarness.cli(
            ["exec", "--app", "cli.none.\(UUID().uuidString)", "--env", "A=a", "--", "/bin/sh", "-c", "touch \"\(marker)\""])
        #expect(none.status == 1 && none.stderr.contains("no such dictionary"), "\(none)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the command ran")
    }

    @Test func everyKeyWithAPrefixBecomesAVariableInUpperCase() throws {
        let secrets = ["api-token": "a-\(UUID().uuidString)", "db.Password": "b-\(UUID().uuidString)", "retries": "5"]
        for (key, value) in secrets { try write(key, value, name: "prefixed") }
        let (command, file) = reportCommand("prefixed")
        let output = try exec(["--name", "prefixed", "--all-with-prefix", "MY_", "--"] + command)
        #expect(output.succeeded && output.stdout.isEmpty && output.stderr.isEmpty, "\(output.how) \(output.stderr)")
        expectNothingShown(output, of: Array(secrets.values))
        let report = try report(file)
        let names = ["api-token": "MY_API_TOKEN", "db.Password": "MY_DB_PASSWORD", "retries": "MY_RETRIES"]
        for (key, variable) in names {
            #expect(try report.variables[variable] == Self.digest(secrets[key]!), "\(variable)")
        }
        #expect(report.variables.keys.filter { $0.hasPrefix("MY_") }.sorted() == names.values.sorted())
    }

    @Test func twoSourcesForOneVariableAreRefusedBeforeTheCommandRuns() throws {
        try write("a-b", "one", name: "clash")
        try write("a_b", "two", name: "clash")
        let marker = "\(folder)/ran"
        let run = ["--", "/bin/sh", "-c", "touch \"\(marker)\""]
        let keys = try exec(["--name", "clash", "--all-with-prefix", "P_"] + run)
        #expect(keys.status == 64 && keys.stderr.contains("P_A_B"), "\(keys)")
        #expect(keys.stderr.contains("'a-b'") && keys.stderr.contains("'a_b'"), "\(keys.stderr)")
        try write("only", "x", name: "single")
        let both = try exec(["--name", "single", "--all-with-prefix", "P_", "--env", "P_ONLY=only"] + run)
        #expect(
            both.status == 64
                && both.stderr.contains("--env P_ONLY=only and key 'only' (--all-with-prefix) would both set P_ONLY"), "\(both)")
        let twice = try exec(["--name", "single", "--env", "X=only", "--env", "X=only"] + run)
        #expect(twice.status == 64 && twice.stderr.contains("X twice"), "\(twice)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the command ran")
    }

    @Test func dataNeedsBase64AndArraysAreRefused() throws {
        let bytes = "AAEC/w=="
        try write("key", bytes, type: "data")
        let json = #"{"list": {"type": "array", "value": [{"type": "string", "value": "x"}]}}"#
        let imported = try CLIHarness.cli(["import", "--app", app.id, "--merge", "-"], input: Data(json.utf8))
        #expect(imported.status == 0, "\(imported)")
        let marker = "\(folder)/ran"
        let run = ["--", "/bin/sh", "-c", "touch \"\(marker)\""]
        let data = try exec(["--env", "KEY=key"] + run)
        #expect(data.status == 64 && data.stderr.contains("--data-as-base64"), "\(data)")
        let array = try exec(["--env", "LIST=list"] + run)
        #expect(array.status == 64 && array.stderr.contains("holds an array"), "\(array)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the command ran")
        let (command, file) = reportCommand("data")
        let base64 = try exec(["--env", "KEY=key", "--data-as-base64", "--"] + command)
        #expect(base64.succeeded, "\(base64)")
        #expect(try report(file).variables["KEY"] == Self.digest(bytes))
    }

    @Test func aCommandThatCannotRunIs126AndOneNotFoundIs127() throws {
        try write("k", "v")
        let missing = try exec(["--env", "K=k", "--", "no-such-command-\(UUID().uuidString)"])
        #expect(missing.status == 127 && missing.stderr.contains("command not found"), "\(missing)")
        let notExecutable = try exec(["--env", "K=k", "--", "\(folder)/report.py"])
        #expect(notExecutable.status == 126 && notExecutable.stderr.contains("cannot be run"), "\(notExecutable)")
    }

    @Test func readKeysListsTheKeysWithoutAValue() throws {
        let token = "tok-\(UUID().uuidString)"
        try write("apiToken", token)
        try write("retries", "3", type: "int")
        let keys = try app.cli("read", "--keys")
        #expect(keys.status == 0 && keys.text == "apiToken\nretries\n", "\(keys)")
        let json = try app.cli("read", "--keys", "--json")
        #expect(try JSONSerialization.jsonObject(with: json.stdout) as? [String] == ["apiToken", "retries"], "\(json)")
        expectNothingShown(keys, of: [token])
        expectNothingShown(json, of: [token])
        let withKey = try app.cli("read", "--keys", "apiToken")
        #expect(withKey.status == 64, "\(withKey)")
    }

    /// The encrypted files under a systemd credential, with no session bus at all.
    @Test(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "needs no provider: runs once, with gnome-keyring"))
    func theEncryptedFilesWorkToo() throws {
        try FileManager.default.createDirectory(atPath: "\(folder)/credentials", withIntermediateDirectories: true)
        var key = Data(count: 32)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        try key.write(to: URL(fileURLWithPath: "\(folder)/credentials/securedictionary"))
        let environment = [
            "CREDENTIALS_DIRECTORY": "\(folder)/credentials", "STATE_DIRECTORY": "\(folder)/state",
            "DBUS_SESSION_BUS_ADDRESS": "", "SECURE_DICT_STORE": "credential",
        ]
        let token = "tok-\(UUID().uuidString)"
        let write = try CLIHarness.cli(
            ["write", "--app", app.id, "apiToken", "-"], input: Data(token.utf8), environment: environment)
        #expect(write.status == 0, "\(write)")
        let (command, file) = reportCommand("files")
        let output = try exec(["--store", "credential", "--env", "API_TOKEN=apiToken", "--"] + command, environment: environment)
        #expect(output.succeeded && output.stdout.isEmpty && output.stderr.isEmpty, "\(output.how) \(output.stderr)")
        #expect(try report(file).variables["API_TOKEN"] == Self.digest(token))
        let keys = try CLIHarness.cli(["read", "--app", app.id, "--keys"], environment: environment)
        #expect(keys.text == "apiToken\n", "\(keys)")
    }
}

extension Data {
    /// The bytes of a hexadecimal text (two digits a byte).
    init(hexadecimal text: String) {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex), index < text.endIndex {
            bytes.append(UInt8(text[index..<next], radix: 16) ?? 0)
            index = next
        }
        self.init(bytes)
    }
}

/// `exec`'s variable names, key mapping and value texts, in-process (no keyring).
extension CLIUnits {
    @Test func execTakesOnlyPortableVariableNames() throws {
        for name in ["A", "_", "API_TOKEN", "lower_case9", "_1"] { #expect(ExecVariables.isValidName(name), "\(name)") }
        for name in ["", "1A", "A-B", "A.B", "Ä", "A B", "A=B"] { #expect(!ExecVariables.isValidName(name), "\(name)") }
        let request = try ExecVariables.Request(parsing: "TOKEN=key=with=equals")
        #expect(request.variable == "TOKEN" && request.key == "key=with=equals")
        for text in ["TOKEN", "=key", "TOKEN=", "1X=key", "A-B=key"] {
            #expect(throws: ValidationError.self, "\(text)") { try ExecVariables.Request(parsing: text) }
        }
    }

    @Test func execMapsKeysToUpperCaseVariablesAfterThePrefix() {
        let names = [
            "apiToken": "APP_APITOKEN", "db-password": "APP_DB_PASSWORD", "db.Password": "APP_DB_PASSWORD",
            "2fa seed": "APP_2FA_SEED", "clé": "APP_CL_", "": "APP_", "x_Y_9": "APP_X_Y_9",
        ]
        for (key, variable) in names {
            #expect(ExecVariables.name(forKey: key, prefix: "APP_") == variable, "\(key)")
            #expect(ExecVariables.isValidName(ExecVariables.name(forKey: key, prefix: "APP_")))
        }
    }

    @Test func execRefusesTwoSourcesForOneVariable() throws {
        let plan = try ExecVariables.plan(
            requests: [try ExecVariables.Request(parsing: "TOKEN=apiToken")], prefix: "P_", keys: ["b", "a"])
        #expect(plan.map(\.variable) == ["TOKEN", "P_A", "P_B"])
        #expect(throws: CommandFailure.self) { try ExecVariables.plan(requests: [], prefix: "P_", keys: ["a-b", "a_b"]) }
        #expect(throws: CommandFailure.self) {
            try ExecVariables.plan(requests: [try ExecVariables.Request(parsing: "P_A=x")], prefix: "P_", keys: ["a"])
        }
    }

    @Test func execGivesScalarsAsTextAndRefusesTheRestWithoutShowingThem() throws {
        let date = try #require(ExactDate.parse("2026-11-22T05:57:00.25+02:00"))
        let texts: [(PropertyListValue, String)] = [
            (.string("s3cr3t value\n"), "s3cr3t value\n"), (.integer(-7), "-7"), (.unsignedInteger(.max), "18446744073709551615"),
            (.real(0.25), "0.25"), (.real(2), "2.0"), (.bool(true), "true"), (.bool(false), "false"),
            (.date(date), "2026-11-22T03:57:00.250Z"),
        ]
        for (value, text) in texts {
            #expect(try ExecVariables.text(of: value, key: "k", dataAsBase64: false) == text)
        }
        #expect(try ExecVariables.text(of: .data(Data([0, 1, 2, 255])), key: "k", dataAsBase64: true) == "AAEC/w==")
        let refused: [PropertyListValue] = [
            .data(Data("s3cr3t".utf8)), .array([.string("s3cr3t")]), .dictionary(["s3cr3t": .string("s3cr3t")]),
            .string("s3cr3t\0"), .date(Date(timeIntervalSinceReferenceDate: 1e12)),
        ]
        for value in refused {
            do {
                _ = try ExecVariables.text(of: value, key: "k", dataAsBase64: false)
                Issue.record("accepted \(value.typeName)")
            } catch let failure {
                guard case .usage(let message) = failure else {
                    Issue.record("not a usage failure")
                    continue
                }
                #expect(message.contains("'k'") && !message.contains("s3cr3t"), "\(message)")
            }
        }
    }

    @Test func execTakesTheCommandAfterTheDoubleDashWhateverItHolds() throws {
        let parsed = try SecureDict.Exec.parse(["--app", "a", "--env", "X=k", "--", "cmd", "--env", "Y=z", "-h"])
        #expect(parsed.command == ["cmd", "--env", "Y=z", "-h"] && parsed.variables == ["X=k"])
        for arguments in [
            ["--app", "a", "--env", "X=k"], ["--app", "a", "--", "cmd"], ["--app", "a", "--all-with-prefix", "1P", "--", "cmd"],
            ["--app", "a", "--env", "X=k", "--env", "X=j", "--", "cmd"],
        ] {
            #expect(throws: (any Error).self, "\(arguments)") { try SecureDict.Exec.parse(arguments) }
        }
    }
}
