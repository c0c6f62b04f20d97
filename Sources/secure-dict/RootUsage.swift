import ArgumentParser
import FoundationEssentials

/// What `secure-dict` says when it is given no subcommand, or a word that is none: a short
/// usage on standard error and exit 64 (`EX_USAGE`), as for every other usage error, instead
/// of argument-parser's full help with exit 0, or its bare "Unexpected argument".
///
/// ```
/// $ secure-dict reed --app com.example.app
/// Error: unknown subcommand 'reed'; did you mean 'read'?
/// Usage: secure-dict <subcommand> [<options>]
/// …
/// ```
enum RootUsage {
    /// The subcommands, in the order of `--help`.
    static var subcommands: [String] { SecureDict.configuration.subcommands.compactMap { $0.configuration.commandName } }

    /// The short usage, below the error line.
    static var usage: String {
        """
        Usage: secure-dict <subcommand> [<options>]
          Subcommands: \(subcommands.joined(separator: ", "))
          See 'secure-dict --help' for more information.
        """
    }

    /// The usage error in `arguments` (the command line after the program's name) that
    /// argument-parser would not report as such, or `nil` to let it parse them.
    static func problem(in arguments: [String]) -> String? {
        guard let first = arguments.first else { return "a subcommand is required" }
        if first == "help" { return helpProblem(Array(arguments.dropFirst())) }
        if first.hasPrefix("-") {
            // The root's own options; a mistyped one gets "did you mean" (argument-parser's
            // "Unknown option" has none).
            let options = ["--help", "-h", "--version"]
            guard !options.contains(first) else { return nil }
            let meant = Suggestion.closest(to: first, among: ["--help", "--version"])
            return "unknown option '\(first)'" + (meant.map { "; did you mean '\($0)'?" } ?? "")
        }
        guard !subcommands.contains(first) else { return nil }
        let suggestion = Suggestion.closest(to: first, among: subcommands + ["help"])
        return "unknown subcommand '\(first)'" + (suggestion.map { "; did you mean '\($0)'?" } ?? "")
    }

    /// `help WORD…` names a subcommand (argument-parser prints the root's help, exit 0, for
    /// any other word).
    private static func helpProblem(_ words: [String]) -> String? {
        var command: any ParsableCommand.Type = SecureDict.self
        var path: [String] = []
        for word in words where !word.hasPrefix("-") {
            let children = command.configuration.subcommands
            guard let child = children.first(where: { $0.configuration.commandName == word }) else {
                let names = children.compactMap { $0.configuration.commandName }
                let of = path.isEmpty ? "" : " of '\(path.joined(separator: " "))'"
                let meant = Suggestion.closest(to: word, among: names).map { "; did you mean '\($0)'?" } ?? ""
                return "unknown subcommand '\(word)'\(of)\(meant)"
            }
            command = child
            path.append(word)
        }
        return nil
    }
}

extension SecureDict {
    /// argument-parser's `main()`, after the root's own usage check, with `keyring run`'s
    /// command marked off, and "did you mean" for a mistyped option.
    static func main() {
        let arguments = KeyringRunArguments.normalized(Array(CommandLine.arguments.dropFirst()))
        if let problem = RootUsage.problem(in: arguments) {
            printError(problem)
            printNote(RootUsage.usage)
            exit(withError: ExitCode.validationFailure)
        }
        var command: any ParsableCommand
        do {
            command = try parseAlone(arguments) ?? parseAsRoot(arguments)
        } catch {
            reportParsing(error, arguments)
        }
        do {
            try command.run()
        } catch {
            exit(withError: error)
        }
    }

    /// The subcommand that `arguments` name first (`read`, `keyring run`), parsed on its own,
    /// or `nil` when that does not succeed: help, `--version`, any usage error and anything
    /// else then goes to ``parseAsRoot(_:)``, which says it exactly as before.
    ///
    /// An optimization: argument-parser's root parse also builds the arguments of every other
    /// subcommand (for completion scripts and pass-through checks), each a round of reflection
    /// and protocol-conformance lookups in the Swift runtime. Parsed alone, `secure-dict read
    /// --app A KEY` runs 14.2 million instructions in argument-parser instead of 17.2 (of 51.9
    /// million in all, 23.2 of them the keyring session's key exchange; valgrind's callgrind
    /// on the installed tool; the benchmark row `cli-read` times the whole process,
    /// with more run-to-run noise than this gain). It is safe because a subcommand parsed alone takes
    /// exactly the words it takes below the root, which has no options of its own but help
    /// and `--version`: `CLIUnits.aSubcommandParsedAloneGetsWhatTheRootParseGives`.
    static func parseAlone(_ arguments: [String]) -> (any ParsableCommand)? {
        let (command, words) = namedSubcommand(in: arguments)
        guard command != SecureDict.self, command.configuration.subcommands.isEmpty,
            let parsed = try? command.parseAsRoot(words),
            type(of: parsed) == command  // not the help that --help asks for: the root's parse says it
        else { return nil }
        return parsed
    }

    /// The subcommand that `arguments` name (the root when none), and the words after its name.
    static func namedSubcommand(in arguments: [String]) -> (command: any ParsableCommand.Type, words: [String]) {
        var command: any ParsableCommand.Type = SecureDict.self
        var words = arguments[...]
        while let word = words.first,
            let child = command.configuration.subcommands.first(where: { $0.configuration.commandName == word })
        {
            command = child
            words = words.dropFirst()
        }
        return (command, Array(words))
    }

    /// argument-parser's report of a parse error, with the option meant after an unknown one
    /// (once), and an unknown option said before what argument-parser checks first (the
    /// options it knows: `read --ap X` is "Unknown option '--ap'", not "Missing '--app'").
    private static func reportParsing(_ error: any Error, _ arguments: [String]) -> Never {
        guard exitCode(for: error) != .success else { exit(withError: error) }  // --help, --version
        let text = fullMessage(for: error)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let unknown: String? =
            if let reported = lines[0].firstMatch(of: /^Error: Unknown option '([^']+)'/) {
                String(reported.1)
            } else if exitCode(for: error) == .validationFailure {
                UnknownOption.first(in: arguments)
            } else {
                nil
            }
        if let unknown {
            // argument-parser's own ". Did you mean '--name'?" when the tool has none.
            let theirs = lines[0].firstMatch(of: /Did you mean '([^']+)'\?/).map { String($0.1) }
            let meant = UnknownOption.suggestion(for: unknown, in: arguments) ?? theirs
            lines[0] = "Error: Unknown option '\(unknown)'" + (meant.map { "; did you mean '\($0)'?" } ?? "")
        }
        try? FileDescriptor.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        exit(withError: ExitCode(exitCode(for: error).rawValue))
    }
}
