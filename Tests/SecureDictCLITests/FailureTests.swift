import Foundation
import SecureDictionaryTestSupport
import Testing

extension SecureDictCLI {
    /// The one line a locked keyring gives: what happened, naming the provider, and its fix.
    static func isLockedLine(_ line: String) -> Bool {
        let names = ["gnome-keyring": "gnome-keyring", "kwallet": "KWallet", "keepassxc": "KeePassXC"]
        return line.hasPrefix("Error: The ") && line.contains(" is locked") && line.hasSuffix("\n")
            && line.contains(names[PrivateKeyring.provider] ?? "?") && line.split(separator: "\n").count == 1
            && line.count <= 300
    }

    @Test func lockedKeyringExitsWith3AndOneLine() throws {
        let app = TestApp()
        #expect(try app.cli("write", "--name", "n", "k", "before").status == 0)
        let stored = try app.storedBytes(name: "n")
        let json = Data(#"{"k": {"type": "string", "value": "after"}}"#.utf8)

        try CLIHarness.daemon("lock")
        var unlocked = false
        defer { if !unlocked { try? CLIHarness.daemon("unlock") } }

        let failing: [(String, [String], Data?)] = [
            ("read", ["--name", "n"], nil), ("read", ["--name", "n", "k"], nil), ("read", ["--name", "n", "--json"], nil),
            ("write", ["--name", "n", "k", "after"], nil), ("write", ["--name", "n", "k", "-"], Data("after".utf8)),
            ("delete", ["--name", "n", "k"], nil), ("export", ["--name", "n"], nil),
            ("import", ["--name", "n", "-", "--replace"], json),
            // A dictionary that was never written: locked, not "empty" or "no such dictionary".
            ("read", ["--name", "never-written"], nil), ("write", ["--name", "never-written", "k", "v"], nil),
        ]
        for (command, arguments, input) in failing {
            let output = try CLIHarness.cli([command, "--app", app.id] + arguments, input: input)
            #expect(output.status == 3, "\(command) \(arguments): \(output)")
            #expect(Self.isLockedLine(output.stderr), "\(command) \(arguments): \(output)")
            #expect(output.stdout.isEmpty)
        }
        let list = try app.cli("list")
        if PrivateKeyring.provider == "keepassxc" {
            // KeePassXC hides the items of a locked database: no list, rather than an empty one.
            #expect(list.status == 3 && Self.isLockedLine(list.stderr), "\(list)")
        } else {
            // Names are attributes, which the keyring lists while locked: list works and says so.
            #expect(list.status == 0, "\(list)")
            #expect(
                list.text.split(separator: "\n").last?.split(separator: " ", omittingEmptySubsequences: true)
                    == [Substring(app.id), "n", "-", "locked"], "\(list)")
        }

        try CLIHarness.daemon("unlock")
        unlocked = true
        #expect(try app.storedBytes(name: "n") == stored)  // untouched while locked
        #expect(try app.cli("read", "--name", "n", "k").text == "before\n")
        #expect(try app.cli("read", "--name", "never-written").status == 1)
    }

    @Test func frozenKeyringTimesOutWithAdvice() throws {
        let app = TestApp()
        #expect(try app.cli("write", "k", "v").status == 0)
        try CLIHarness.daemon("freeze")
        var thawed = false
        defer { if !thawed { try? CLIHarness.daemon("thaw") } }

        let start = ContinuousClock.now
        let output = try app.cli("read", "k", "--timeout", "1")
        let elapsed = ContinuousClock.now - start
        #expect(output.status == 3, "\(output)")
        #expect(output.stderr.hasPrefix("Error: The keyring did not answer in time: "), "\(output)")
        #expect(output.stderr.contains("--timeout") && output.stderr.split(separator: "\n").count == 1)
        #expect(elapsed < .seconds(10), "took \(elapsed)")  // not D-Bus's own 25 s

        try CLIHarness.daemon("thaw")
        thawed = true
        #expect(try app.cli("read", "k").text == "v\n")
    }

    @Test func corruptItemIsReportedAndCanBeDeleted() throws {
        let app = TestApp()
        let garbage = Data("bplist00 not a property list".utf8) + Data(count: 40)
        try app.plant(garbage, name: "broken")

        for arguments in [
            ["read", "--name", "broken"], ["write", "--name", "broken", "k", "v"],
            ["export", "--name", "broken"], ["import", "--name", "broken", "-", "--merge"],
        ] {
            let output = try CLIHarness.cli([arguments[0], "--app", app.id] + arguments.dropFirst(), input: Data("{}".utf8))
            #expect(output.status == 3, "\(arguments): \(output)")
            #expect(output.stderr.hasPrefix("Error: The stored dictionary is unreadable ("), "\(output)")
            #expect(
                output.stderr.hasSuffix(
                    "nothing was written over it. Remove it with 'secure-dict delete --app \(app.id) --name broken --force' if you do not need it.\n"
                ),
                "\(output)")
        }
        #expect(try app.storedBytes(name: "broken") == garbage)  // never written over
        let list = try app.cli("list")
        #expect(list.status == 0 && list.text.contains("unreadable"), "\(list)")

        #expect(try app.cli("delete", "--name", "broken", "--force").status == 0)
        #expect(try app.cli("read", "--name", "broken").status == 1)
    }
}

extension SecureDictCLI {
    /// Before: `--unlock` where no unlock dialog can be shown (no display, no prompter: a
    /// private session of its own, without the prompter of scripts/test's) said "the keyring's
    /// unlock dialog was cancelled", in about 50 ms, although nobody had cancelled anything.
    @Test(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "gnome-keyring's unlock prompt"))
    func unlockWhereNoDialogCanBeShownSaysSoAndHowToUnlock() throws {
        let script = #"""
            "$0" write --app cli.unlock k v || exit 90
            "$1/scripts/keyring-daemon" lock || exit 91
            env -u DISPLAY -u WAYLAND_DISPLAY "$0" read --app cli.unlock k --unlock 2>&1
            echo "exit $?"
            started=$(date +%s%3N)
            DISPLAY=:98 "$0" read --app cli.unlock k --unlock 2>&1
            echo "exit $? after $(($(date +%s%3N) - started)) ms"
            """#
        let output = try CLIHarness.run(
            PrivateKeyring.packageRoot.appendingPathComponent("scripts/with-private-keyring").path,
            ["--", "bash", "-c", script, CLIHarness.binary, PrivateKeyring.packageRoot.path])
        #expect(output.status == 0, "\(output)")
        let lines = output.text.split(separator: "\n").map(String.init)
        try #require(lines.count == 4, "\(output)")
        // Whatever the display: the library finds no prompter on the bus, and says so at once.
        let expected =
            "Error: The keyring (gnome-keyring) is locked and no unlock dialog can be shown here: unlock it with "
            + "'gnome-keyring-daemon --replace --unlock --components=secrets' (password on stdin)."
        #expect(lines[0] == expected, "\(output)")
        #expect(lines[1] == "exit 3")
        #expect(lines[2] == expected, "\(output)")
        #expect(lines[3].hasPrefix("exit 3 after "), "\(output)")
    }

    /// `--unlock` shows the keyring's unlock dialog (the real GNOME prompter of
    /// `scripts/with-private-keyring --prompter`), answered here with keys as a user would.
    @Test(
        .enabled(
            if: PrivateKeyring.provider == "gnome-keyring" && (PrivateKeyring.hasPrompter || PrivateKeyring.required),
            "needs gnome-keyring with the GNOME prompter: scripts/with-private-keyring --prompter"))
    func unlockShowsTheDialogAndReadsOnceUnlocked() async throws {
        let app = TestApp()
        #expect(try app.cli("write", "k", "kept").status == 0)
        try CLIHarness.daemon("lock")
        defer { try? CLIHarness.daemon("unlock") }
        let id = app.id
        let reading = Task.detached { try CLIHarness.cli(["read", "--app", id, "k", "--unlock"]) }
        for command in ["wait-shown", "type-password", "wait-gone"] {
            let output = try PrivateKeyring.prompter(command)
            #expect(output.succeeded, "prompter \(command): \(output)")
        }
        let read = try await reading.value
        #expect(read.status == 0 && read.text == "kept\n", "\(read)")
    }
}
