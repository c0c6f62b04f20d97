import ArgumentParser

/// An option that the subcommand named on a command line does not take, and the one meant.
///
/// argument-parser checks the options it knows first (`validate()`, "Missing '--app <ID>'")
/// and reports a word it does not know only after that, so `read --ap X` said that `--app`
/// was missing instead of that `--ap` is no option. The tool looks for such a word itself
/// before it reports a usage error.
///
/// ```swift
/// UnknownOption.first(in: ["read", "--ap", "com.example.app"])          // "--ap"
/// UnknownOption.suggestion(for: "--ap", in: ["read", "--ap", "x"])      // "--app"
/// UnknownOption.suggestion(for: "-a", in: ["read", "-a", "x"])          // "--app"
/// ```
enum UnknownOption {
    /// The first word of `arguments` (before `--`) that is written as an option and that the
    /// subcommand they name does not take, or `nil`.
    static func first(in arguments: [String]) -> String? {
        let (command, words) = SecureDict.namedSubcommand(in: arguments)
        let names = optionNames(of: command)
        for word in words {
            if word == "--" { return nil }
            guard word.hasPrefix("-"), word != "-" else { continue }
            if word.hasPrefix("--") {
                let name = String(word.prefix { $0 != "=" })
                if !names.contains(name) { return name }
            } else if !names.contains(String(word.prefix(2))) {
                // "-nNAME" and "-ab" start with a short option the subcommand takes.
                return word
            }
        }
        return nil
    }

    /// The option meant by `option`: the closest of the long options the subcommand named in
    /// `arguments` takes, or for a short one (`-a`) the only long option that starts with its
    /// letter.
    static func suggestion(for option: String, in arguments: [String]) -> String? {
        let long = optionNames(of: SecureDict.namedSubcommand(in: arguments).command).filter { $0.hasPrefix("--") }.sorted()
        if !option.hasPrefix("--"), option.count == 2 {
            let starting = long.filter { $0.dropFirst(2).first == option.last }
            return starting.count == 1 ? starting[0] : nil
        }
        return Suggestion.closest(to: String(option.prefix { $0 != "=" }), among: long)
    }

    /// Every option name `command` takes, hidden ones included: the names at the start of the
    /// lines of its help's OPTIONS section ("-n, --name <NAME>   The dictionary's name…").
    private static func optionNames(of command: any ParsableCommand.Type) -> Set<String> {
        let help = SecureDict.helpMessage(for: command, includeHidden: true, columns: 10_000)
        var names: Set<String> = ["--help", "-h"]
        var inOptions = false
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasSuffix(":"), !line.hasPrefix(" ") {
                inOptions = line.uppercased().contains("OPTIONS")
                continue
            }
            let trimmed = line.drop { $0 == " " }
            guard inOptions, trimmed.hasPrefix("-") else { continue }
            // The names end where the help text starts, after two spaces.
            let head = trimmed.firstRange(of: "  ").map { trimmed[..<$0.lowerBound] } ?? trimmed
            for match in head.matches(of: /--?[A-Za-z0-9][A-Za-z0-9-]*/) { names.insert(String(match.output)) }
        }
        return names
    }
}
