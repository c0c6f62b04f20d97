import Foundation
import SecureDictionaryTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `secure-dict doctor --find` on real providers: one dictionary split between gnome-keyring's
/// default collection, a collection that is no longer the default, encrypted files, and
/// KeePassXC after it took the Secret Service's bus name.
extension SecureDictCLI {
    /// `doctor --find --json`'s copies of `name`, as (kind, alias, keys) triples, with the report.
    private static func find(_ app: String, _ name: String, _ extra: [String], environment: [String: String]) throws -> (
        copies: [[String: Any]], report: [String: Any]
    ) {
        let output = try CLIHarness.cli(
            ["doctor", "--find", "--app", app, "--name", name, "--json"] + extra, environment: environment)
        #expect(output.status == 0, "\(output)")
        let report = try #require(try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any], "\(output)")
        return (try #require(report["copies"] as? [[String: Any]], "\(report)"), report)
    }

    @Test(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "switches from gnome-keyring to KeePassXC: runs once"))
    func doctorFindNamesEveryCopyAcrossCollectionsFilesAndProviders() throws {
        let app = "cli.find.\(UUID().uuidString)"
        let base = try TemporaryFolder.create("sd-find", credential: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let files = "\(base)/files"
        let environment = ["CREDENTIALS_DIRECTORY": "\(base)/credentials"]
        func write(_ key: String, _ extra: [String] = []) throws {
            let output = try CLIHarness.cli(
                ["write", "--app", app, "--name", "tokens", key, "value"] + extra, environment: environment)
            #expect(output.status == 0, "\(output)")
        }

        // 1 key in the default collection; 2 in a collection that was the default meanwhile;
        // 3 in the files a fallback wrote.
        try write("a")
        let login = try CLIHarness.fixture(["alias", "default"]).trimmedText
        let other = try CLIHarness.fixture(["create-collection", "--label", "Find", "--password", "pw"]).trimmedText
        defer { _ = try? CLIHarness.fixture(["delete-collection", other]) }
        #expect(try CLIHarness.fixture(["set-alias", "default", other]).status == 0)
        try write("a")
        try write("b")
        #expect(try CLIHarness.fixture(["set-alias", "default", login]).status == 0)
        for key in ["a", "b", "c"] { try write(key, ["--store", "credential", "--folder", files]) }

        let (copies, report) = try Self.find(app, "tokens", ["--folder", files], environment: environment)
        let summary = copies.map {
            "\($0["kind"] as? String ?? "?") \($0["collectionAlias"] as? String ?? "-") \($0["keys"] as? Int ?? -1)"
        }
        #expect(summary.sorted() == ["file - 3", "keyring - 2", "keyring default 1"], "\(report)")
        #expect((report["owner"] as? [String: Any])?["executable"] as? String == "/usr/bin/gnome-keyring-daemon", "\(report)")

        // KeePassXC takes the bus name: gnome-keyring's copies cannot be asked for, and doctor says
        // it is installed and where its files are; KeePassXC's own copy and the files are found.
        try CLIHarness.daemon("stop")
        let keepassxc = PrivateKeyring.packageRoot.appendingPathComponent("scripts/providers/keepassxc").path
        let started = try CLIHarness.run(keepassxc, ["start"])
        #expect(started.status == 0, "\(started)")
        try write("k")
        let (underKeePassXC, switched) = try Self.find(app, "tokens", ["--folder", files], environment: environment)
        let kinds = underKeePassXC.map { "\($0["kind"] as? String ?? "?") \($0["keys"] as? Int ?? -1)" }
        #expect(kinds.sorted() == ["file 3", "keyring 1"], "\(switched)")
        #expect(switched["providerName"] as? String == "KeePassXC", "\(switched)")
        let installed = try #require(switched["installed"] as? [[String: Any]], "\(switched)")
        let gnome = installed.first { $0["name"] as? String == "gnome-keyring" }
        #expect((gnome?["dataFolder"] as? String)?.hasSuffix("/keyrings") == true, "\(installed)")

        // Back to gnome-keyring: its copies are there again; the other collection, locked after
        // the restart, is named and not unlocked (gnome-keyring's search finds nothing in a
        // locked collection with a password: its copy is not counted).
        let control = try #require(ProcessInfo.processInfo.environment["SD_TEST_KEYRING_CONTROL"])
        let pid = try #require(
            Int32(
                String(contentsOfFile: "\(control)/provider.pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            ))
        kill(pid, SIGTERM)
        // Its bus name goes when it exits; `start` refuses a name still owned.
        let patience = ContinuousClock.now + .seconds(20)
        func running() -> Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
            return !stat.contains(") Z ")  // a zombie has left the bus
        }
        while running() && ContinuousClock.now < patience { usleep(20_000) }
        try CLIHarness.daemon("start")
        let (back, restarted) = try Self.find(app, "tokens", ["--folder", files], environment: environment)
        let again = back.map {
            "\($0["kind"] as? String ?? "?") \($0["collectionAlias"] as? String ?? "-") \($0["keys"] as? Int ?? -1)"
        }
        #expect(again.sorted() == ["file - 3", "keyring default 1"], "\(restarted)")
        let collections = try #require(restarted["collections"] as? [[String: Any]], "\(restarted)")
        let locked = collections.first { $0["path"] as? String == other }
        #expect(locked?["locked"] as? Bool == true && locked?["label"] as? String == "Find", "\(collections)")
        _ = try CLIHarness.cli(["delete", "--app", app, "--name", "tokens", "--force"])
    }
}

extension SecureDictCLI {
    @Test func moveTakesADictionaryFromTheFilesToTheKeyringAndRefusesAMissingOne() throws {
        let app = TestApp()
        let base = try TemporaryFolder.create("sd-move", credential: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let environment = ["CREDENTIALS_DIRECTORY": "\(base)/credentials"]
        let files = ["--store", "credential", "--folder", "\(base)/files"]
        let wrote = try CLIHarness.cli(["write", "--app", app.id, "--name", "moved", "k", "v"] + files, environment: environment)
        #expect(wrote.status == 0, "\(wrote)")
        let move = [
            "move", "--app", app.id, "--name", "moved", "--from", "credential", "--from-folder", "\(base)/files", "--to",
            "keyring",
        ]
        let moved = try CLIHarness.cli(move, environment: environment)
        #expect(moved.status == 0 && moved.stdout.isEmpty, "\(moved)")
        let read = try CLIHarness.cli(["read", "--app", app.id, "--name", "moved", "k"])
        #expect(read.trimmedText == "v", "\(read)")
        let left = try CLIHarness.cli(["read", "--app", app.id, "--name", "moved", "k"] + files, environment: environment)
        #expect(left.status != 0, "\(left)")
        let again = try CLIHarness.cli(move, environment: environment)
        #expect(again.status == 1 && again.stderr.contains("nothing was moved"), "\(again)")
        _ = try CLIHarness.cli(["delete", "--app", app.id, "--name", "moved", "--force"])
    }
}

extension SecureDictCLI {
    /// `doctor --find` names a locked collection without unlocking it; `--unlock` shows the
    /// provider's dialog (answered here as a user would) and then counts what it holds.
    @Test(
        .enabled(
            if: PrivateKeyring.provider == "gnome-keyring" && (PrivateKeyring.hasPrompter || PrivateKeyring.required),
            "needs gnome-keyring with the GNOME prompter: scripts/with-private-keyring --prompter"))
    func doctorFindNamesALockedCollectionAndUnlocksItOnlyWhenAsked() async throws {
        let app = TestApp()
        #expect(try app.cli("write", "--name", "tokens", "k", "v").status == 0)
        try CLIHarness.daemon("lock")
        defer { try? CLIHarness.daemon("unlock") }
        let id = app.id
        let locked = try CLIHarness.cli(["doctor", "--find", "--app", id])
        #expect(locked.status == 0 && locked.text.contains("locked: 1 item(s) of \(id) not read"), "\(locked)")
        #expect(!locked.text.contains("Dictionary 'tokens'"), "\(locked)")
        let finding = Task.detached { try CLIHarness.cli(["doctor", "--find", "--app", id, "--unlock"]) }
        for command in ["wait-shown", "type-password", "wait-gone"] {
            let output = try PrivateKeyring.prompter(command)
            #expect(output.succeeded, "prompter \(command): \(output)")
        }
        let found = try await finding.value
        #expect(found.status == 0 && found.text.contains("1 key, decodes"), "\(found)")
        _ = try app.cli("delete", "--name", "tokens", "--force")
    }
}
