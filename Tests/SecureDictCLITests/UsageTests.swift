import Foundation
import SecureDictionaryTestSupport
import Testing

/// Help and usage errors: argument parsing only, no keyring call, so no keyring needed.
@Suite struct SecureDictUsage {
    static let subcommands = [
        "list", "read", "write", "delete", "exec", "export", "import", "adopt", "export-items", "doctor", "move",
    ]

    @Test func rootHelpExplainsTheToolTheJSONFormAndTheExitCodes() throws {
        let help = try CLIHarness.cli(["--help"])
        #expect(help.status == 0, "\(help)")
        for needle in [
            "USAGE: secure-dict <subcommand>", "--app", "SECURE_DICT_APP", "Examples:",
            "{\"type\": T, \"value\": V}", "Exit codes:", "64  usage error",
        ] {
            #expect(help.text.contains(needle), "root help lacks \(needle)")
        }
        for subcommand in Self.subcommands {
            #expect(help.text.contains("  \(subcommand) "), "root help lacks \(subcommand)")
        }
    }

    @Test(arguments: subcommands)
    func everySubcommandHasHelpWithExamples(_ subcommand: String) throws {
        for arguments in [[subcommand, "--help"], ["help", subcommand]] {
            let help = try CLIHarness.cli(arguments)
            #expect(help.status == 0, "\(arguments): \(help)")
            #expect(help.text.contains("Examples:"), "\(arguments) has no examples")
            #expect(help.text.contains("--collection <ALIAS>") && help.text.contains("--timeout <SECONDS>"))
            // Every option and argument has a help text: no line lists an option alone.
            let reference = help.text.components(separatedBy: "\nUSAGE: ").last ?? ""
            let bare = reference.split(separator: "\n").dropFirst().filter { line in
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                return (trimmed.hasPrefix("--") || trimmed.hasPrefix("<")) && !trimmed.contains("  ")
            }
            #expect(bare.isEmpty, "options without help in \(subcommand): \(bare)")
            // Help wraps at 80 columns: no example may be cut in two.
            #expect(!help.text.split(separator: "\n").contains { $0.count > 80 && !$0.hasPrefix("USAGE:") })
        }
        let write = try CLIHarness.cli(["write", "--help"])
        #expect(write.text.contains("process list"))  // why '-' exists
    }

    @Test func usageErrorsExitWith64() throws {
        let cases: [[String]] = [
            ["read"],  // no --app, no $SECURE_DICT_APP
            ["frobnicate"],  // no such subcommand
            ["write", "--app", "cli.usage", "key"],  // no VALUE
            ["write", "--app", "cli.usage", "key", "v", "--type", "integr"],
            ["read", "--app", "cli.usage", "--timeout", "0"],
            ["read", "--app", "cli.usage", "--timeout", "soon"],
            ["read", "--app", "", "k"],  // invalid application ID
            ["read", "--app", "cli.usage", "--name", "bad\u{7}name"],
            ["export", "--app", "cli.usage", "--format", "yaml"],
            ["import", "--app", "cli.usage", "f.json", "--merge", "--replace"],
            ["delete", "--app", "cli.usage"],  // whole item, no --force, stdin a pipe
        ]
        for arguments in cases {
            let output = try CLIHarness.cli(arguments)
            #expect(output.status == 64, "\(arguments): \(output)")
            #expect(output.stderr.hasPrefix("Error: "), "\(arguments): \(output)")
            #expect(output.stdout.isEmpty, "\(arguments): \(output)")
        }
    }

    /// The version printed is the CHANGELOG's latest version heading: one source for both.
    @Test func theVersionIsTheChangelogsLatest() throws {
        let changelog = try String(
            contentsOf: PrivateKeyring.packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let latest = try #require(changelog.firstMatch(of: /\n## \[([0-9]+\.[0-9]+\.[0-9]+)\]/)?.1)
        #expect(try CLIHarness.cli(["--version"]).text == "\(latest)\n")
    }

    /// `--version`, which argument-parser once refused as an unknown option.
    @Test func versionIsPrinted() throws {
        let version = try CLIHarness.cli(["--version"])
        #expect(version.status == 0, "\(version)")
        #expect(version.text.wholeMatch(of: /[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?\n/) != nil, "\(version)")
        #expect(version.stderr.isEmpty)
    }

    /// Before: bare `secure-dict` printed its 60 lines of help on standard output with exit 0.
    @Test func bareCommandPrintsAShortUsageOnStandardErrorAndExits64() throws {
        let bare = try CLIHarness.cli([])
        #expect(bare.status == 64, "\(bare)")
        #expect(bare.stdout.isEmpty, "\(bare)")
        #expect(bare.stderr.hasPrefix("Error: a subcommand is required\nUsage: secure-dict <subcommand>"), "\(bare)")
        #expect(bare.stderr.contains("list, read, write, delete, exec, export, import, adopt, export-items, doctor"), "\(bare)")
        #expect(bare.stderr.split(separator: "\n").count <= 5, "\(bare)")
    }

    /// "Did you mean" for a mistyped subcommand; a word close to none gets the usage alone.
    @Test func aMistypedSubcommandNamesTheOneMeant() throws {
        for (typed, meant) in [("reed", "read"), ("lsit", "list"), ("exprot", "export"), ("Doctor", "doctor"), ("hlep", "help")] {
            let output = try CLIHarness.cli([typed, "--app", "cli.usage"])
            #expect(output.status == 64 && output.stdout.isEmpty, "\(typed): \(output)")
            #expect(
                output.stderr.hasPrefix("Error: unknown subcommand '\(typed)'; did you mean '\(meant)'?\nUsage: "),
                "\(typed): \(output)")
        }
        let far = try CLIHarness.cli(["frobnicate"])
        #expect(far.status == 64 && far.stderr.hasPrefix("Error: unknown subcommand 'frobnicate'\nUsage: "), "\(far)")
    }

    /// `doctor --unlock` was once taken and did nothing (doctor shows no dialog); it is
    /// refused with the reason, and doctor's help does not offer it.
    @Test func doctorRefusesUnlock() throws {
        let output = try CLIHarness.cli(["doctor", "--unlock"])
        #expect(output.status == 64 && output.stdout.isEmpty, "\(output)")
        #expect(output.stderr.hasPrefix("Error: doctor takes no --unlock: it shows no dialog"), "\(output)")
        let help = try CLIHarness.cli(["doctor", "--help"])
        #expect(!help.text.contains("--unlock  ") && !help.text.contains("[--unlock]"), "\(help)")
        #expect(try CLIHarness.cli(["read", "--help"]).text.contains("\n  --unlock "))
    }

    @Test func anInvalidValueIsAUsageErrorThatDoesNotRepeatTheValue() throws {
        let secret = "hunter2-not-a-number"
        for type in ["int", "real", "bool", "date", "data"] {
            let output = try CLIHarness.cli(["write", "--app", "cli.usage", "k", secret, "--type", type])
            #expect(output.status == 64, "\(type): \(output)")
            #expect(output.stderr.contains("--type \(type)"), "\(output)")
            #expect(!output.stderr.contains(secret) && !output.text.contains(secret))
        }
    }

    /// No session bus at all, over SSH or in a container: no provider is touched.
    static func withoutABus(ssh: Bool) -> [String: String] {
        [
            "DBUS_SESSION_BUS_ADDRESS": "", "XDG_RUNTIME_DIR": "/nonexistent", "DISPLAY": "", "WAYLAND_DISPLAY": "",
            "SSH_CONNECTION": ssh ? "10.0.0.2 5000 10.0.0.1 22" : "", "SSH_TTY": "", "SECURE_DICT_STORE": "",
        ]
    }

    /// Before: with no session bus, `doctor` reported one cause as two problems, sent an
    /// SSH user to `dbus-run-session -- bash`, and the error pointed at `doctor` itself. One
    /// problem, whose fix is this project's answer for the environment: over SSH the
    /// passphrase store; in a container or service the credential store, and for tests
    /// `secure-dict keyring run`.
    @Test func doctorWithoutABusReportsOneProblemWithThisProjectsAnswer() throws {
        for ssh in [true, false] {
            let output = try CLIHarness.cli(["doctor"], environment: Self.withoutABus(ssh: ssh))
            #expect(output.status == 3, "\(output)")
            let problems = output.text.split(separator: "\n").filter { $0.hasPrefix("PROBLEM") }
            #expect(problems.count == 1, "ssh \(ssh): \(output.text)")
            #expect(!output.text.contains("dbus-run-session") && !output.text.contains("secure-dict doctor"), "\(output.text)")
            #expect(output.text.contains("--store passphrase"), "\(output.text)")
            if !ssh {
                #expect(output.text.contains("secure-dict keyring run -- COMMAND") && output.text.contains("--store credential"))
            }
        }
    }

    /// A command with no bus names the `--store` options to a shell user, not the
    /// library's types (`EncryptedFileStore`, `AutomaticStore`).
    @Test func aCommandWithoutABusNamesTheStoreOptions() throws {
        let read = try CLIHarness.cli(["read", "--app", "cli.usage"], environment: Self.withoutABus(ssh: true))
        #expect(read.status == 3, "\(read)")
        #expect(read.stderr.contains("--store passphrase") && !read.stderr.contains("EncryptedFileStore"), "\(read)")
        let automatic = try CLIHarness.cli(
            ["read", "--app", "cli.usage", "--store", "auto"], environment: Self.withoutABus(ssh: false))
        #expect(automatic.status == 3, "\(automatic)")
        #expect(automatic.stderr.contains("--file-key") && !automatic.stderr.contains("AutomaticStore"), "\(automatic)")
    }

    /// Before: `help nosuch` printed the main help and exited 0; `--verison` and a
    /// subcommand's mistyped option got no "did you mean".
    @Test func aMistypedHelpTopicOrOptionIsAUsageErrorThatNamesTheOneMeant() throws {
        let help = try CLIHarness.cli(["help", "nosuch"])
        #expect(
            help.status == 64 && help.stdout.isEmpty && help.stderr.hasPrefix("Error: unknown subcommand 'nosuch'"), "\(help)")
        let version = try CLIHarness.cli(["--verison"])
        #expect(version.status == 64 && version.stderr.contains("did you mean '--version'?"), "\(version)")
        let json = try CLIHarness.cli(["read", "--app", "cli.usage", "--jsn"])
        #expect(json.status == 64 && json.stderr.contains("did you mean '--json'?"), "\(json)")
    }
}
