import ArgumentParser
import Foundation
import SecureDictionary
import Testing

@testable import secure_dict

/// The tool's parsing and formatting, in-process (no keyring, no subprocess).
@Suite struct CLIUnits {
    @Test(arguments: [
        ("2026-11-22T03:57:00Z", 817_012_620.0),
        ("2026-11-22T05:57:00.25+02:00", 817_012_620.25),
        ("2026-11-22 03:57Z", 817_012_620.0),
        ("2026-11-22", 816_998_400.0),
        ("2001-01-01T00:00:00Z", 0.0),
    ])
    func exactDateParses(_ text: String, _ seconds: Double) {
        #expect(ExactDate.parse(text)?.timeIntervalSinceReferenceDate == seconds)
    }

    @Test(arguments: ["2026-11-22T03:57:00", "2026-13-01", "2026-02-30", "0000-01-01", "22/11/2026", "", "now"])
    func exactDateRefuses(_ text: String) {
        #expect(ExactDate.parse(text) == nil)
    }

    @Test func exactDateReadsBackEveryBit() {
        for seconds in [0.0, 785_995_020.123456, -3_000_000_000.5, 1e-6, 785_995_020 + 1.0 / 3] {
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            let text = ExactDate.format(date)
            #expect(text.flatMap(ExactDate.parse) == date, "\(seconds) → \(text ?? "nil")")
        }
        #expect(ExactDate.format(Date(timeIntervalSinceReferenceDate: .infinity)) == nil)
        #expect(ExactDate.format(Date(timeIntervalSinceReferenceDate: 1e12)) == nil)  // after the year 9999
    }

    @Test func valueTypesParseWhatTheHelpPromises() throws {
        #expect(try ValueType.int.value(from: "-7") == .integer(-7))
        #expect(try ValueType.int.value(from: "18446744073709551615") == .unsignedInteger(.max))
        #expect(try ValueType.real.value(from: " 0.5 ") == .real(0.5))
        #expect(try ValueType.real.value(from: "-inf") == .real(-.infinity))
        #expect(try ValueType.bool.value(from: "Yes") == .bool(true))
        #expect(try ValueType.data.value(from: "AAEC\n/w==") == .data(Data([0, 1, 2, 255])))
        #expect(try ValueType.string.value(from: " kept as is ") == .string(" kept as is "))
        for (type, text) in [
            (ValueType.int, "18446744073709551616"), (.real, "1e400"), (.real, "-1e400"),
            (.bool, "maybe"), (.data, "not base64!"), (.date, "yesterday"),
        ] {
            #expect(throws: (any Error).self, "\(type) \(text)") { try type.value(from: text) }
        }
        // The message says what was expected, never what was given.
        do {
            _ = try ValueType.int.value(from: "s3cr3t")
            Issue.record("accepted")
        } catch let error as ValidationError {
            #expect(!error.message.contains("s3cr3t") && error.message.contains("--type int"))
        }
    }

    @Test func typedJSONRoundTripsEveryType() throws {
        let entries: [String: PropertyListValue] = [
            "s": .string("é\u{0}\n"), "i": .integer(.min), "u": .unsignedInteger(.max), "r": .real(0.1),
            "inf": .real(.infinity), "b": .bool(false), "d": .date(Date(timeIntervalSinceReferenceDate: 1.5)),
            "far": .date(Date(timeIntervalSinceReferenceDate: 1e13)), "x": .data(Data([0, 255])),
            "a": .array([.integer(1), .array([])]), "o": .dictionary(["k": .bool(true)]),
        ]
        #expect(try TypedJSON.decode(TypedJSON.encode(entries), source: "test") == entries)
    }

    @Test func typedJSONRefusesWhatItCannotKeep() {
        let cases = [
            #"{"r": {"type": "real", "value": 1e400}}"#,
            #"{"k": {"type": "string", "value": 1}}"#,
            #"{"k": {"type": "uuid", "value": "x"}}"#,
            #"{"k": 1}"#,
            #"{"a": {"type": "bool", "value": true}, "a": {"type": "bool", "value": false}}"#,
            "not json",
        ]
        for json in cases {
            #expect(throws: CommandFailure.self, "\(json)") { try TypedJSON.decode(Data(json.utf8), source: "test") }
        }
    }

    /// Every NaN kept to the bit through the typed JSON form; Swift's own `.nan` stays `"nan"`.
    @Test func typedJSONKeepsNaNPayloads() throws {
        for bits: UInt64 in [0x7FF8_0000_0000_0000, 0x7FF8_0000_0000_0001, 0xFFF8_0000_0000_0000, 0x7FF0_0000_0000_0001] {
            let entries: [String: PropertyListValue] = [
                "r": .real(Double(bitPattern: bits)), "d": .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: bits))),
            ]
            let decoded = try TypedJSON.decode(TypedJSON.encode(entries), source: "test")
            #expect(decoded["r"]?.realValue?.bitPattern == bits, "\(String(bits, radix: 16))")
            #expect(decoded["d"]?.dateValue?.timeIntervalSinceReferenceDate.bitPattern == bits, "\(String(bits, radix: 16))")
        }
        #expect(String(decoding: try TypedJSON.encode(.real(.nan)), as: UTF8.self).contains(#""nan""#))
        for text in ["nan(0x7ff0000000000000)", "nan(0x7ff800000000001)", "nan(0x+ff8000000000001)", "nan(7ff8000000000001)"] {
            let json = #"{"r": {"type": "real", "value": "\#(text)"}}"#
            #expect(throws: CommandFailure.self, "\(text)") { try TypedJSON.decode(Data(json.utf8), source: "test") }
        }
    }

    @Test func suggestionsAreSlipsOfTheKeyboardOnly() {
        #expect(Suggestion.closest(to: "reed", among: ["list", "read", "write"]) == "read")
        #expect(Suggestion.closest(to: "lsit", among: ["list", "read"]) == "list")
        #expect(Suggestion.closest(to: "Settings", among: ["cache", "settings"]) == "settings")
        #expect(Suggestion.closest(to: "setigns", among: ["settings"]) == "settings")  // a deletion and a swap
        #expect(Suggestion.closest(to: "red", among: ["read", "rad"]) == "read")  // the first of equals
        #expect(Suggestion.closest(to: "frobnicate", among: ["list", "read", "write"]) == nil)
        #expect(Suggestion.closest(to: "abc", among: ["xyz"]) == nil)
        #expect(Suggestion.closest(to: "read", among: ["read"]) == nil)  // the word itself is no suggestion
    }

    @Test func namesThatWouldDeceiveATerminalAreEscaped() {
        #expect(VisibleText.escaped("settings") == "settings")
        #expect(VisibleText.escaped("héllo 🔑 👨‍👩‍👧") == "héllo 🔑 👨‍👩‍👧")  // U+200D joins the family
        #expect(VisibleText.escaped("txt.\u{202E}exe") == #""txt.\u202eexe""#)
        #expect(VisibleText.escaped("a\u{2028}b\u{7}c\u{E0001}") == #""a\u2028b\u0007c\U000e0001""#)
        #expect(VisibleText.escaped("\"x\\\u{200B}") == #""\"x\\\u200b""#)
        #expect(VisibleText.escapingJSON("[\"a\u{202E}b\", \"\u{1F511}\"]") == #"["a\u202eb", "🔑"]"#)
        #expect(VisibleText.escapingJSON("\"\u{E0001}\"") == #""\udb40\udc01""#)
    }

    @Test func duplicateKeysAreFoundByPositionOnly() {
        func first(_ json: String) -> JSONDuplicateKeys.Collision? { JSONDuplicateKeys.first(in: Array(json.utf8)) }
        #expect(first(#"{"a": 1, "b": [{"x": 1}, {"x": 2}], "c": "}"}"#) == nil)
        #expect(first(#"{"a": 1, "b": 2, "a": 3}"#) == .init(depth: 1, first: 1, second: 3))
        // An escape and the character itself; composed and decomposed é; a surrogate pair.
        #expect(first(#"{"\u0041": 1, "A": 2}"#) == .init(depth: 1, first: 1, second: 2))
        #expect(first(#"{"\u00e9": 1, "e\u0301": 2}"#) == .init(depth: 1, first: 1, second: 2))
        #expect(first(#"{"\ud83d\ude00": 1, "😀": 2}"#) == .init(depth: 1, first: 1, second: 2))
        #expect(first(#"{"k": {"v": [{"q": 1, "q": 2}]}}"#) == .init(depth: 3, first: 1, second: 2))
        #expect(first(#"{"\"": 1, "\\": 2}"#) == nil)
        #expect(first("{\"a\": ") == nil)  // not JSON: no answer rather than a crash
    }

    /// Before: a 3 MB data value printed as 4 MB of base64 on one line of `read`'s
    /// listing. Long values are shortened there, saying how to get them whole; a value read
    /// alone (`read KEY`, for scripts) is never shortened.
    @Test func aLongValueIsShortenedInTheListingWithHowToGetItWhole() {
        let blob = Data(repeating: 7, count: 3_000_000)
        let text = String(repeating: "y", count: 5000)
        let lines = HumanFormat.lines([
            "blob": .data(blob), "text": .string(text), "short": "s", "nested": .array([.string(text)]),
        ])
        #expect(lines.allSatisfy { $0.count <= 300 }, "\(lines.map(\.count))")
        let long = lines.filter { $0.hasPrefix("blob") || $0.hasPrefix("text") || $0.hasPrefix("  [0]") }
        #expect(long.count == 3 && long.allSatisfy { $0.contains("--json") && $0.contains("export") }, "\(long)")
        #expect(lines.contains("short (string): \"s\""))
        #expect(HumanFormat.bare(.data(blob)) == blob.base64EncodedString())
        #expect(HumanFormat.bare(.string(text)) == text)
    }

    /// Before: `keyring run swift --version` printed secure-dict's version and ran
    /// nothing, `keyring run swift test --help` its help, `keyring run swift test` "Missing
    /// COMMAND". Everything from the first word that is not an option of `keyring run` is the
    /// command.
    @Test func keyringRunTakesEverythingFromTheFirstWordAsTheCommand() {
        func normalized(_ line: String) -> String {
            KeyringRunArguments.normalized(line.split(separator: " ").map(String.init)).joined(separator: " ")
        }
        #expect(normalized("keyring run swift --version") == "keyring run -- swift --version")
        #expect(normalized("keyring run swift test --help") == "keyring run -- swift test --help")
        #expect(
            normalized("keyring run --keep /tmp/k --timeout 5 swift test")
                == "keyring run --keep /tmp/k --timeout 5 -- swift test")
        #expect(normalized("keyring run --keep=/tmp/k make -j2") == "keyring run --keep=/tmp/k -- make -j2")
        #expect(normalized("keyring run -- swift test") == "keyring run -- swift test")
        #expect(normalized("keyring run --help") == "keyring run --help")
        #expect(normalized("keyring run --kep /tmp/k swift") == "keyring run --kep /tmp/k swift")  // argument-parser says which
        #expect(normalized("read --app a run") == "read --app a run")
    }

    /// Before: `help nosuch` printed the main help with exit 0, and `--verison` got no
    /// "did you mean".
    @Test func helpOfNoSuchCommandAndAMistypedOptionAreUsageErrorsWithASuggestion() {
        #expect(RootUsage.problem(in: ["help", "nosuch"]) == "unknown subcommand 'nosuch'")
        #expect(RootUsage.problem(in: ["help", "raed"]) == "unknown subcommand 'raed'; did you mean 'read'?")
        #expect(
            RootUsage.problem(in: ["help", "keyring", "rnu"]) == "unknown subcommand 'rnu' of 'keyring'; did you mean 'run'?")
        #expect(RootUsage.problem(in: ["help", "read"]) == nil)
        #expect(RootUsage.problem(in: ["help", "keyring", "run"]) == nil)
        #expect(RootUsage.problem(in: ["help"]) == nil)
        #expect(RootUsage.problem(in: ["--verison"]) == "unknown option '--verison'; did you mean '--version'?")
        #expect(RootUsage.problem(in: ["--version"]) == nil && RootUsage.problem(in: ["-h"]) == nil)
        #expect(UnknownOption.suggestion(for: "--jsn", in: ["read", "--app", "a", "--jsn"]) == "--json")
        #expect(UnknownOption.suggestion(for: "--kep", in: ["keyring", "run", "--kep", "d"]) == "--keep")
    }

    /// The start-up optimization of `SecureDict.parseAlone`: a subcommand parsed on its own is
    /// the command the root's parse makes of the same line, field for field; and every line
    /// the root's parse answers otherwise (help, the version, completion scripts, a usage
    /// error) is left to it.
    @Test(arguments: [
        "read --app a", "read --app a token --json", "read --app a --name settings --collection session --timeout 7 k",
        "read --app a --store passphrase --passphrase-fd 3 --folder /tmp/sd k", "read --app a --store auto --file-key credential",
        "write --app a k v --type int", "write --app a k - --unlock --maximum-size 4096", "delete --app a k",
        "list", "list --app a --json", "export --app a -o /tmp/x.json", "import --app a /tmp/x.json --replace",
        "adopt --app a --from python-keyring --service s --dry-run", "export-items --app a --to keytar --service s",
        "doctor --json", "keyring run --timeout 5 -- sh -c true", "keyring watchdog --parent /tmp --runner 1",
        "read --app a --version", "read --help", "read -h", "read --app", "read --app a --jsn", "write --app a k v --type no",
        "list --generate-completion-script bash", "read --experimental-dump-help", "doctor --unlock", "keyring run",
        "keyring", "help read", "--version", "", "nosuch --app a",
    ])
    func aSubcommandParsedAloneGetsWhatTheRootParseGives(_ line: String) {
        let arguments = KeyringRunArguments.normalized(line.split(separator: " ").map(String.init))
        // Not parsed alone: the root's parse is what runs.
        guard let alone = SecureDict.parseAlone(arguments) else { return }
        guard let root = try? SecureDict.parseAsRoot(arguments), "\(type(of: root))" != "HelpCommand" else {
            Issue.record("\(line): parsed alone as \(type(of: alone)), where the root's parse does otherwise")
            return
        }
        var rootFields = ""
        var aloneFields = ""
        dump(root, to: &rootFields)
        dump(alone, to: &aloneFields)
        #expect(aloneFields == rootFields, "\(line)")
    }
}
