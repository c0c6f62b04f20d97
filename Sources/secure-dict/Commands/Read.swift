import ArgumentParser
import FoundationEssentials
import SecureDictionary

extension SecureDict {
    struct Read: ReportingCommand {
        static let configuration = CommandConfiguration(
            commandName: "read",
            abstract: "Print a whole dictionary, or the value of one key.",
            discussion: """
                Without KEY, prints every entry as 'key (type): value', keys sorted, strings \
                quoted, nested arrays and dictionaries indented below their key; a value longer \
                than \(HumanFormat.longestShown) characters shows its start only. With KEY, \
                prints the value alone: a string as it is, data as base64, a date in ISO 8601 \
                (UTC), so that scripts can capture it. --json prints the typed JSON form \
                described in 'secure-dict --help' (the same as 'export --format json').

                --keys prints the keys alone, one a line, sorted, and no value (--json: a JSON \
                array of them): what there is to give a command with 'secure-dict exec'. A key \
                holding a character that a terminal would not show as it is is quoted, with \
                that character escaped as \\uXXXX.

                This prints secrets: mind who can see your terminal or the file you redirect \
                it to. Exits with 1 when the dictionary or the key does not exist.

                Examples:
                  secure-dict read --app com.example.app --name settings
                  secure-dict read --app com.example.app --name settings theme
                  TOKEN=$(secure-dict read --app com.example.app apiToken)
                  secure-dict read --app com.example.app --json
                  secure-dict read --app com.example.app --keys
                """)

        @Argument(help: ArgumentHelp("The key to read. Without it, the whole dictionary.", valueName: "KEY"))
        var key: String?

        @OptionGroup var dictionary: DictionaryOptions

        @Flag(help: "Print typed JSON ({\"type\": …, \"value\": …}) instead of text.")
        var json = false

        @Flag(help: "Print the keys alone, without their values.")
        var keys = false

        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if keys, key != nil { throw ValidationError("--keys lists a dictionary's keys: give no KEY with it") }
        }

        func perform() throws {
            let location = dictionary.location(global)
            let opened = try location.openExisting(key: key)
            if keys { return try printKeys(opened.keys.sorted(), of: location) }
            if let key {
                // The one value asked for, never a snapshot: a snapshot copies every key and
                // value into ordinary memory, which stays there, unwiped, until the tool exits.
                guard let value = opened[key] else { throw location.noSuchKey(key) }
                try Terminal.write(json ? try TypedJSON.encode(value) : Data((HumanFormat.bare(value) + "\n").utf8))
                return
            }
            let entries = opened.snapshot
            if json {
                try Terminal.write(try TypedJSON.encode(entries))
            } else if entries.isEmpty {
                Terminal.noteForHumans("No entries in \(location.description).")
            } else {
                try Terminal.write(HumanFormat.lines(entries).joined(separator: "\n") + "\n")
            }
        }

        /// `--keys`: the keys alone, a line each, or a JSON array; never a value.
        private func printKeys(_ names: [String], of location: DictionaryLocation) throws {
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
                let text = String(decoding: try encoder.encode(names), as: UTF8.self)
                try Terminal.write(VisibleText.escapingJSON(text) + "\n")
            } else if names.isEmpty {
                Terminal.noteForHumans("No entries in \(location.description).")
            } else {
                try Terminal.write(names.map(VisibleText.escaped).joined(separator: "\n") + "\n")
            }
        }
    }
}
