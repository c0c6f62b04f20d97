import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Testing

@testable import secure_dict

/// A mistyped option is said as such, with one suggestion: `read --ap X` said "Missing
/// '--app <ID>'" (argument-parser checks the options it knows before the words it does not),
/// and a suggestion came twice ("did you mean '--name'?. Did you mean '--name'?").
extension SecureDictUsage {
    @Test func aMistypedOptionIsNamedBeforeAMissingOneWithOneSuggestion() throws {
        let cases: [(arguments: [String], line: String)] = [
            (["read", "--ap", "cli.usage", "k"], "Error: Unknown option '--ap'; did you mean '--app'?"),
            (["read", "-a", "cli.usage", "k"], "Error: Unknown option '-a'; did you mean '--app'?"),
            (["write", "--ap=cli.usage", "k", "v"], "Error: Unknown option '--ap'; did you mean '--app'?"),
            (
                ["exec", "--app", "cli.usage", "--evn", "A=a", "--", "true"],
                "Error: Unknown option '--evn'; did you mean '--env'?"
            ),
            (["read", "--app", "cli.usage", "--nmae", "x"], "Error: Unknown option '--nmae'; did you mean '--name'?"),
            (["read", "--app", "cli.usage", "--frobnicate"], "Error: Unknown option '--frobnicate'"),
        ]
        for (arguments, line) in cases {
            let output = try CLIHarness.cli(arguments)
            #expect(output.status == 64, "\(arguments): \(output)")
            #expect(output.stderr.hasPrefix(line + "\n"), "\(arguments): \(output.stderr)")
            #expect(output.stderr.lowercased().components(separatedBy: "did you mean").count <= 2, "\(output.stderr)")
            #expect(!output.stderr.contains("Missing"), "\(arguments): \(output.stderr)")
        }
        // What argument-parser checks stays as it was when no option is mistyped.
        let missing = try CLIHarness.cli(["read", "k"])
        #expect(missing.status == 64 && missing.stderr.hasPrefix("Error: Missing '--app <ID>'"), "\(missing)")
        let hidden = try CLIHarness.cli(["doctor", "--unlock"])
        #expect(hidden.status == 64 && hidden.stderr.contains("doctor takes no --unlock"), "\(hidden)")
    }
}

extension CLIUnits {
    @Test func anUnknownOptionIsFoundBeforeTheTerminatorAmongTheSubcommandsOwn() {
        #expect(UnknownOption.first(in: ["read", "--ap", "a"]) == "--ap")
        #expect(UnknownOption.first(in: ["read", "--app=a", "-n", "x", "--json"]) == nil)
        #expect(UnknownOption.first(in: ["read", "-nsettings", "--app", "a"]) == nil)
        #expect(UnknownOption.first(in: ["exec", "--app", "a", "--env", "A=a", "--", "cmd", "--evn"]) == nil)
        #expect(UnknownOption.first(in: ["write", "--app", "a", "k", "-"]) == nil)
        #expect(UnknownOption.first(in: ["doctor", "--unlock"]) == nil)  // hidden, yet its own
        #expect(UnknownOption.suggestion(for: "-a", in: ["exec", "-a"]) == nil)  // --app or --all-with-prefix
        #expect(UnknownOption.suggestion(for: "--evn", in: ["exec", "--evn"]) == "--env")
    }
}

extension CLIUnits {
    /// The library's "expected Int, found string" mixed Swift's names with the stored types'
    /// and gave no fix: the tool says both types as `read` shows them, and the commands.
    @Test func aWrongTypeNamesBothTypesAlikeWithTheFix() {
        let text = message(for: .typeMismatch(expected: "Int", found: "string"), hint: nil)
        #expect(text.contains("a string, not the integer that was asked for (Int)"), "\(text)")
        #expect(text.contains("secure-dict read") && text.contains("--type int"), "\(text)")
        let data = message(for: .typeMismatch(expected: "Data", found: "date"), hint: nil)
        #expect(data.contains("a date, not the data that was asked for (Data)") && data.contains("as data with"), "\(data)")
    }
}
