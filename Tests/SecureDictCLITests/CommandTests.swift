import Foundation
import SecureDictionaryTestSupport
import Testing

/// Every command of the built `secure-dict` against the real private keyring.
///
/// Serialized: some of them lock or freeze the daemon, which other suites share. Suites of
/// different targets are kept apart by `swift test --no-parallel` (scripts/test).
@Suite(.serialized, .enabled(if: CLIHarness.enabled, "needs the private keyring of scripts/with-private-keyring"))
struct SecureDictCLI {
    @Test func aKeyringIsRunning() throws {
        #expect(CLIHarness.available, "SD_REQUIRE_KEYRING is set but no private keyring runs")
        let list = try CLIHarness.cli(["list", "--app", "cli.probe.\(UUID().uuidString)"])
        #expect(list.status == 0, "\(list)")
    }

    @Test func writeThenReadEveryType() throws {
        let app = TestApp()
        let writes: [(key: String, value: String, type: String, bare: String, line: String)] = [
            ("theme", "dark", "string", "dark", #"theme (string): "dark""#),
            ("launches", "3", "int", "3", "launches (integer): 3"),
            ("ratio", "0.25", "real", "0.25", "ratio (real): 0.25"),
            ("whole", "2", "real", "2.0", "whole (real): 2.0"),
            ("enabled", "yes", "bool", "true", "enabled (bool): true"),
            (
                "since", "2026-11-22T05:57:00.25+02:00", "date", "2026-11-22T03:57:00.250Z",
                "since (date): 2026-11-22T03:57:00.250Z"
            ),
            ("day", "2026-11-22", "date", "2026-11-22T00:00:00.000Z", "day (date): 2026-11-22T00:00:00.000Z"),
            ("blob", "AAEC/w==", "data", "AAEC/w==", "blob (data, 4 bytes): AAEC/w=="),
        ]
        for write in writes {
            let output = try app.cli("write", "--name", "settings", write.key, write.value, "--type", write.type)
            #expect(output.status == 0 && output.stdout.isEmpty && output.stderr.isEmpty, "\(write.key): \(output)")
        }
        for write in writes {
            let read = try app.cli("read", "--name", "settings", write.key)
            #expect(read.status == 0 && read.text == write.bare + "\n", "\(write.key): \(read)")
        }
        let whole = try app.cli("read", "--name", "settings")
        #expect(whole.status == 0)
        #expect(whole.text == writes.map(\.line).sorted().joined(separator: "\n") + "\n", "\(whole)")

        // --json keeps the types apart.
        let json = try app.cli("read", "--name", "settings", "--json")
        #expect(json.status == 0, "\(json)")
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: [String: Any]])
        #expect(
            object.mapValues { $0["type"] as? String } == [
                "theme": "string", "launches": "integer", "ratio": "real", "whole": "real", "enabled": "bool",
                "since": "date", "day": "date", "blob": "data",
            ])
        #expect(object["since"]?["value"] as? String == "2026-11-22T03:57:00.250Z")
        #expect(object["blob"]?["value"] as? String == "AAEC/w==")
        let one = try app.cli("read", "--name", "settings", "launches", "--json")
        #expect(one.text == "{\n  \"type\" : \"integer\",\n  \"value\" : 3\n}\n", "\(one)")

        // A value that starts with a dash comes after "--"; an existing key is replaced.
        #expect(try app.cli("write", "--name", "settings", "--type", "int", "launches", "--", "-5").status == 0)
        #expect(try app.cli("read", "--name", "settings", "launches").text == "-5\n")
    }

    @Test func writeReadsADashValueFromStandardInput() throws {
        let app = TestApp()
        let secret = "s3cr3t-\(UUID().uuidString)"
        // One final newline is not part of the value; everything else is, including inner newlines.
        let write = try app.cli("write", "apiToken", "-", input: Data("\(secret)\nline two\n".utf8))
        #expect(write.status == 0 && write.stdout.isEmpty && write.stderr.isEmpty, "\(write)")
        #expect(try app.cli("read", "apiToken").text == "\(secret)\nline two\n")

        #expect(try app.cli("write", "key", "-", "--type", "data", input: Data("AAEC\nAw==\r\n".utf8)).status == 0)
        #expect(try app.cli("read", "key").text == "AAECAw==\n")
        #expect(try app.cli("write", "count", "-", "--type", "int", input: Data("42\n".utf8)).status == 0)
        #expect(try app.cli("read", "count", "--json").text.contains("\"integer\""))

        // An invalid value from standard input: a usage error that does not show the input.
        let invalid = try app.cli("write", "count", "-", "--type", "int", input: Data(secret.utf8))
        #expect(invalid.status == 64, "\(invalid)")
        #expect(invalid.stderr.hasPrefix("Error: the value on standard input is not valid for --type int"))
        #expect(!invalid.stderr.contains(secret) && !invalid.text.contains(secret))
        #expect(try app.cli("read", "count").text == "42\n")
    }

    @Test func applicationIDFromTheEnvironment() throws {
        let app = TestApp()
        let environment = ["SECURE_DICT_APP": app.id]
        #expect(try CLIHarness.cli(["write", "greeting", "hello"], environment: environment).status == 0)
        #expect(try app.cli("read", "greeting").text == "hello\n")
        #expect(try CLIHarness.cli(["read", "greeting"], environment: environment).text == "hello\n")
        let list = try CLIHarness.cli(["list"], environment: environment)
        #expect(list.text.contains(app.id) && list.text.split(separator: "\n").count == 2, "\(list)")
    }

    @Test func noSuchKeyOrDictionaryExitsWith1() throws {
        let app = TestApp()
        let missing: [[String]] = [
            ["read"], ["read", "k"], ["read", "--json"], ["export"], ["delete", "k"], ["delete", "--force"],
        ]
        for arguments in missing {
            let output = try CLIHarness.cli([arguments[0], "--app", app.id] + arguments.dropFirst())
            #expect(output.status == 1, "\(arguments): \(output)")
            #expect(output.stderr.hasPrefix("Error: no such dictionary: the default dictionary of \(app.id)"), "\(output)")
            #expect(output.stderr.split(separator: "\n").count == 1 && output.stdout.isEmpty)
        }
        #expect(try app.cli("write", "--name", "settings", "present", "1").status == 0)
        for arguments in [["read", "absent"], ["read", "absent", "--json"], ["delete", "absent"]] {
            let output = try CLIHarness.cli([arguments[0], "--app", app.id, "--name", "settings"] + arguments.dropFirst())
            #expect(output.status == 1, "\(arguments): \(output)")
            // The key the user typed, and where to see the keys there are.
            #expect(
                output.stderr == """
                    Error: no such key 'absent' in dictionary 'settings' of \(app.id) (see its keys with \
                    'secure-dict read --app \(app.id) --name settings --keys')

                    """, "\(output)")
        }
        // An existing but empty dictionary is not "no such dictionary".
        #expect(try app.cli("delete", "--name", "settings", "present").status == 0)
        let empty = try app.cli("read", "--name", "settings", "--json")
        #expect(empty.status == 0, "\(empty)")
        #expect((try JSONSerialization.jsonObject(with: empty.stdout) as? [String: Any])?.isEmpty == true)
    }

    @Test func listShowsNamesCountsAndStates() throws {
        let app = TestApp()
        #expect(try app.cli("write", "a", "1").status == 0)
        #expect(try app.cli("write", "--name", "settings", "a", "1").status == 0)
        #expect(try app.cli("write", "--name", "settings", "b", "2").status == 0)
        let table = try app.cli("list")
        #expect(table.status == 0, "\(table)")
        let rows = table.text.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(
            rows == [
                ["APPLICATION", "NAME", "ENTRIES", "STATE"],
                [Substring(app.id), "(default)", "1", "unlocked"],
                [Substring(app.id), "settings", "2", "unlocked"],
            ])
        let json = try app.cli("list", "--json")
        let items = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [[String: Any]])
        #expect(items.map { $0["name"] as? String } == ["", "settings"])
        #expect(items.map { $0["entries"] as? Int } == [1, 2])
        #expect(
            items.map { $0["item"] as? String } == ["\(app.id).__SecureDictionary__", "\(app.id).__SecureDictionary__.settings"])
        // Nothing of this app: an empty list, exit 0.
        let none = try CLIHarness.cli(["list", "--app", "cli.none.\(UUID().uuidString)"])
        #expect(none.status == 0 && none.stdout.isEmpty, "\(none)")
        let noneJSON = try CLIHarness.cli(["list", "--json", "--app", "cli.none.\(UUID().uuidString)"])
        #expect((try JSONSerialization.jsonObject(with: noneJSON.stdout) as? [Any])?.isEmpty == true, "\(noneJSON)")
    }

    @Test func deleteOneKeyOrTheWholeDictionary() throws {
        let app = TestApp()
        #expect(try app.cli("write", "--name", "n", "keep", "1").status == 0)
        #expect(try app.cli("write", "--name", "n", "drop", "2").status == 0)
        let key = try app.cli("delete", "--name", "n", "drop")
        #expect(key.status == 0 && key.stdout.isEmpty && key.stderr.isEmpty, "\(key)")
        #expect(try app.cli("read", "--name", "n").text == "keep (string): \"1\"\n")

        // Standard input is a pipe here: the whole item needs --force, and stays without it.
        #expect(try app.cli("delete", "--name", "n").status == 64)
        #expect(try app.cli("read", "--name", "n", "keep").status == 0)
        let item = try app.cli("delete", "--name", "n", "--force")
        #expect(item.status == 0 && item.stdout.isEmpty && item.stderr.isEmpty, "\(item)")
        #expect(try app.cli("read", "--name", "n").status == 1)
        #expect(try app.cli("list").stdout.isEmpty)
    }

    @Test(.enabled(if: PrivateKeyring.hasSessionCollection, Comment(rawValue: PrivateKeyring.noSessionCollection)))
    func anotherCollection() throws {
        let app = TestApp()
        #expect(try app.cli("write", "--collection", "session", "k", "in memory").status == 0)
        #expect(try app.cli("read", "--collection", "session", "k").text == "in memory\n")
        #expect(try app.cli("read", "k").status == 1)  // not in the default collection
    }

    /// Every provider: an alias it lacks is named as such, not "no Secret Service".
    @Test func aliasTheProviderLacks() throws {
        let app = TestApp()
        let missing = try app.cli("read", "--collection", "no-such-alias", "k")
        #expect(missing.status == 3, "\(missing)")
        // Not "no Secret Service is available … start gnome-keyring": it is running.
        #expect(missing.stderr.hasPrefix("Error: The keyring has no collection called 'no-such-alias'"), "\(missing)")
    }
}
