import ArgumentParser

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
        // Options (--help, --version, or a mistyped one, which argument-parser reports) and
        // the subcommands themselves, `help` included.
        guard !first.hasPrefix("-"), first != "help", !subcommands.contains(first) else { return nil }
        let suggestion = Suggestion.closest(to: first, among: subcommands + ["help"])
        return "unknown subcommand '\(first)'" + (suggestion.map { "; did you mean '\($0)'?" } ?? "")
    }
}

extension SecureDict {
    /// argument-parser's `main()`, after the root's own usage check.
    static func main() {
        if let problem = RootUsage.problem(in: Array(CommandLine.arguments.dropFirst())) {
            printError(problem)
            printNote(RootUsage.usage)
            exit(withError: ExitCode.validationFailure)
        }
        main(nil)
    }
}
