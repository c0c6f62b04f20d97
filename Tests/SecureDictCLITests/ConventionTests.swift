import Foundation
import SecureDictionaryTestSupport
import Testing

/// What people expect of names and of `list`, against the keyring.
extension SecureDictCLI {
    @Test func aMissingDictionaryNamesTheOneThatWasMeant() throws {
        let app = TestApp()
        #expect(try app.cli("write", "--name", "settings", "theme", "dark").status == 0)

        // --name forgotten: KEY is the name of a dictionary (the default one does not exist).
        for command in ["read", "delete"] {
            let forgot = try app.cli(command, "settings")
            #expect(forgot.status == 1, "\(command): \(forgot)")
            #expect(
                forgot.stderr == """
                    Error: no such dictionary: the default dictionary of \(app.id); \(app.id) has a dictionary named \
                    'settings': did you mean --name settings?

                    """, "\(command): \(forgot)")
        }
        // Without KEY: the application's dictionaries are named.
        let whole = try app.cli("export")
        #expect(whole.status == 1, "\(whole)")
        #expect(whole.stderr.hasSuffix("has only named dictionaries ('settings'): give one with --name\n"), "\(whole)")

        // A slip in --name.
        for name in ["setings", "Settings", "settnigs"] {
            let typo = try app.cli("read", "--name", name, "theme")
            #expect(typo.status == 1, "\(name): \(typo)")
            #expect(typo.stderr.hasSuffix("; did you mean --name settings?\n"), "\(name): \(typo)")
        }
        // A slip in --app.
        let otherApp = try CLIHarness.cli(["read", "--app", app.id + "x", "--name", "settings"])
        #expect(otherApp.status == 1 && otherApp.stderr.hasSuffix("; did you mean --app \(app.id)?\n"), "\(otherApp)")

        // The default dictionary exists but lacks KEY, which names another dictionary.
        #expect(try app.cli("write", "other", "1").status == 0)
        let key = try app.cli("read", "settings")
        #expect(key.status == 1, "\(key)")
        #expect(
            key.stderr == """
                Error: no such key 'settings' in the default dictionary of \(app.id); \(app.id) also has a dictionary \
                named 'settings': did you mean --name settings?

                """, "\(key)")
        // Nothing close: no guess.
        let far = try app.cli("read", "--name", "unrelated")
        #expect(far.stderr.hasSuffix("(see 'secure-dict list')\n") && !far.stderr.contains("did you mean"), "\(far)")
    }

    /// An empty list said nothing unless standard output was a terminal (here it is a pipe).
    @Test func anEmptyListSaysThereAreNone() throws {
        let app = "cli.none.\(UUID().uuidString)"
        let none = try CLIHarness.cli(["list", "--app", app])
        #expect(none.status == 0 && none.stdout.isEmpty, "\(none)")
        #expect(none.stderr == "\(app) has no dictionaries in collection 'default'.\n", "\(none)")
        // An application ID one slip away from one that has dictionaries.
        let real = TestApp()
        #expect(try real.cli("write", "k", "v").status == 0)
        let slip = try CLIHarness.cli(["list", "--app", String(real.id.dropLast())])
        #expect(slip.stderr.hasSuffix("has no dictionaries in collection 'default'; did you mean --app \(real.id)?\n"), "\(slip)")
        // --json stays a JSON array, nothing on standard error.
        let json = try CLIHarness.cli(["list", "--json", "--app", app])
        #expect(json.text == "[\n\n]\n" || json.text == "[]\n", "\(json)")
        #expect(json.stderr.isEmpty, "\(json)")
    }

    /// Names that a terminal would show reversed (U+202E) or broken over two lines (U+2028),
    /// or not at all (U+200B), are quoted with the character escaped, in the table and in JSON.
    @Test func listEscapesNamesThatWouldDeceiveATerminal() throws {
        let app = TestApp()
        let names = ["report\u{202E}fdp.exe", "two\u{2028}lines", "zero\u{200B}width", "plain", "\"quoted"]
        for name in names {
            #expect(try app.cli("write", "--name", name, "k", "v").status == 0, "\(name)")
        }
        let table = try app.cli("list")
        #expect(table.status == 0, "\(table)")
        for raw in ["\u{202E}", "\u{2028}", "\u{200B}"] {
            #expect(!table.text.contains(raw), "\(table)")
        }
        for shown in [#""report\u202efdp.exe""#, #""two\u2028lines""#, #""zero\u200bwidth""#, " plain ", #""\"quoted""#] {
            #expect(table.text.contains(shown), "\(shown) in \(table)")
        }
        #expect(table.text.split(separator: "\n").count == names.count + 1, "one line each: \(table)")

        let json = try app.cli("list", "--json")
        #expect(json.status == 0, "\(json)")
        #expect(!json.text.contains("\u{202E}") && !json.text.contains("\u{2028}"), "\(json)")
        #expect(json.text.contains(#"report\u202efdp.exe"#), "\(json)")
        // The same JSON value: the escapes decode to the names.
        let items = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [[String: Any]])
        #expect(Set(items.compactMap { $0["name"] as? String }) == Set(names))
    }

    /// A name with a control character (which SecureDictionary refuses, but another program
    /// can store) must be listed escaped, not left out. The library leaves such items out of
    /// `SecureDictionary.items`, so the tool cannot see them yet: a known issue until the
    /// library reports them.
    @Test func listShowsANameWithAControlCharacterEscaped() throws {
        let app = TestApp()
        let name = "bell\u{7}name"
        let item = "\(app.id).__SecureDictionary__.\(name)"
        let planted = try CLIHarness.fixture(
            [
                "plant", "--label", item, "--attr", "service=\(item)", "--attr", "application=\(app.id)",
                "--attr", "dictionary=\(name)", "--attr", "xdg:schema=io.github.securedictionary.Dictionary",
            ], input: Data("bplist00".utf8))
        #expect(planted.status == 0, "\(planted)")
        defer { _ = try? CLIHarness.fixture(["delete", "--attr", "application=\(app.id)"]) }
        let table = try app.cli("list")
        #expect(table.status == 0, "\(table)")
        withKnownIssue("SecureDictionary.items leaves out items whose names break its rules") {
            #expect(table.text.contains(#""bell\u0007name""#), "\(table)")
        }
        #expect(!table.text.contains("\u{7}"), "\(table)")
    }
}
