import Foundation
import SecureDictionaryTestSupport
import Testing

/// `--store` and `doctor`'s report of the store, for machines without a keyring:
/// encrypted files under a credential or a passphrase, and the automatic choice that never
/// degrades silently. The encrypted files need no keyring; the default store's report runs
/// against the private one.
@Suite(
    .serialized,
    .enabled(if: !PrivateKeyring.available || PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct StoreOption {
    let base: String
    let app = "cli.files.\(UUID().uuidString)"

    init() throws {
        base = try TemporaryFolder.create("sd-store", credential: true)
    }

    /// secure-dict with the credential handed over as systemd does, and no session bus.
    func cli(_ arguments: [String], input: Data? = nil, bus: Bool = false, extra: [String: String] = [:]) throws
        -> CLIHarness.Output
    {
        var environment = ["CREDENTIALS_DIRECTORY": "\(base)/credentials", "STATE_DIRECTORY": "\(base)/state"]
        if !bus {
            environment["DBUS_SESSION_BUS_ADDRESS"] = ""
            environment["XDG_RUNTIME_DIR"] = base
        }
        return try CLIHarness.cli(arguments, input: input, environment: environment.merging(extra) { _, new in new })
    }

    @Test func everyCommandWorksOnFilesUnderACredential() throws {
        let store = ["--store", "credential"]
        #expect(try cli(["write", "--app", app, "--name", "tokens", "token", "s3cr3t"] + store).status == 0)
        let read = try cli(["read", "--app", app, "--name", "tokens", "token"] + store)
        #expect(read.status == 0 && read.trimmedText == "s3cr3t", "\(read)")
        let list = try cli(["list", "--app", app] + store)
        #expect(list.status == 0 && list.text.contains("tokens"), "\(list)")
        let files = try FileManager.default.contentsOfDirectory(atPath: "\(base)/state/securedictionary")
        #expect(files.contains { $0.hasSuffix(".sdict") })
        #expect(try cli(["delete", "--app", app, "--name", "tokens", "--force"] + store).status == 0)
        #expect(try cli(["read", "--app", app, "--name", "tokens", "token"] + store).status == 1)
        // The environment variable names the store too.
        #expect(try cli(["write", "--app", app, "k", "v"], extra: ["SECURE_DICT_STORE": "credential"]).status == 0)
        #expect(try cli(["read", "--app", app, "k"] + store).trimmedText == "v")
    }

    @Test func aPassphraseFromADescriptor() throws {
        let store = ["--store", "passphrase", "--folder", "\(base)/files", "--passphrase-fd", "0"]
        #expect(try cli(["write", "--app", app, "k", "v"] + store, input: Data("pw-\(app)\n".utf8)).status == 0)
        // Kept in the kernel keyring for the session: not asked again (what is given is not read).
        let again = try cli(["read", "--app", app, "k"] + store, input: Data("not it\n".utf8))
        #expect(again.status == 0 && again.trimmedText == "v", "\(again)")
    }

    @Test func theAutomaticChoiceNeverDegradesSilently() throws {
        let none = try cli(["write", "--app", app, "k", "v", "--store", "auto"])
        #expect(none.status == 3, "\(none)")
        #expect(none.stderr.contains("--file-key passphrase") && !none.stderr.contains("AutomaticStore"), "\(none)")
        #expect(try cli(["write", "--app", app, "k", "v", "--store", "auto", "--file-key", "credential"]).status == 0)
        #expect(try cli(["read", "--app", app, "k", "--store", "credential"]).trimmedText == "v")
        let misplaced = try cli(["read", "--app", app, "k", "--file-key", "credential"])
        #expect(misplaced.status == 64 && misplaced.stderr.contains("--store auto"), "\(misplaced)")
    }

    @Test func doctorReportsTheFilesTheirFolderAndKey() throws {
        #expect(try cli(["write", "--app", app, "k", "v", "--store", "credential"]).status == 0)
        let output = try cli(["doctor", "--json", "--store", "auto", "--file-key", "credential"])
        #expect(output.status == 0, "\(output)")
        let report = try #require(try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any], "\(output)")
        let store = try #require(report["store"] as? [String: String], "\(report)")
        #expect(store["chosen"] == "encryptedFiles" && store["option"] == "auto")
        #expect(store["folder"] == "\(base)/state/securedictionary")
        #expect(store["reason"]?.contains("no Secret Service here") == true, "\(store)")
        let findings = try #require(report["findings"] as? [[String: String]])
        #expect(findings.prefix(3).map { $0["check"] ?? "" } == ["store", "folder", "key"], "\(findings)")
        #expect(findings.allSatisfy { $0["status"] != "problem" }, "\(findings)")
        // A missing credential is a problem with the command that makes one.
        let missing = try cli(["doctor", "--store", "credential", "--credential", "other-key"])
        #expect(missing.status == 3 && missing.text.contains("systemd-creds encrypt --name=other-key"), "\(missing)")
        // An unsafe folder is a problem that names the fix.
        chmod("\(base)/state/securedictionary", 0o777)
        let unsafe = try cli(["doctor", "--store", "credential"])
        #expect(unsafe.status == 3 && unsafe.text.contains("chmod 700"), "\(unsafe)")
        // Nothing fits: says so, with the fix.
        let nothing = try cli(["doctor", "--store", "auto"])
        #expect(nothing.status == 3 && nothing.text.contains("--file-key"), "\(nothing)")
    }

    @Test(.enabled(if: CLIHarness.enabled, "needs the private keyring"))
    func doctorNamesTheSecretServiceWhenItIsTheStore() throws {
        let output = try cli(["doctor", "--json"], bus: true)
        let report = try #require(try JSONSerialization.jsonObject(with: output.stdout) as? [String: Any], "\(output)")
        #expect((report["store"] as? [String: String])?["chosen"] == "secretService", "\(report)")
        let auto = try cli(["doctor", "--json", "--store", "auto", "--file-key", "credential"], bus: true)
        let chosen = try #require(try JSONSerialization.jsonObject(with: auto.stdout) as? [String: Any], "\(auto)")
        #expect((chosen["store"] as? [String: String])?["chosen"] == "secretService", "\(chosen)")
        #expect(auto.status == 0, "\(auto)")
    }
}
