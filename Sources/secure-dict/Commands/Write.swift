import ArgumentParser
import FoundationEssentials
import SecureDictionary

extension SecureDict {
    struct Write: ReportingCommand {
        static let configuration = CommandConfiguration(
            commandName: "write",
            abstract: "Set the value of one key (creating the dictionary if needed).",
            discussion: """
                Without --type, VALUE keeps the type the key already holds (an integer stays \
                an integer, and a VALUE that is not one is refused); a new key is a string. \
                --type replaces the value whatever it held. Give '-' as VALUE to read it \
                from standard input instead: do so for secrets, since a VALUE on the command \
                line can be seen by other users in the process list and stays in your shell \
                history. On a terminal, '-' asks for the value without echoing it; from a \
                pipe or file, the whole input is the value, less one final newline.

                Types: string (any text), int (42, -7), real (0.5, 1e-3, inf), bool (true, \
                false, yes, no, 1, 0), date (ISO 8601 with a zone, e.g. 2026-11-22T03:57:00Z \
                or 2026-11-22T05:57:00.25+02:00; a day such as 2026-11-22; or 'now'), data \
                (base64). Arrays and nested dictionaries can be written with 'import --merge'.

                A VALUE that starts with '-' comes after '--', e.g. \
                'write --app ID --type int offset -- -5'. The tool prints nothing on success.

                Examples:
                  secure-dict write --app com.example.app --name settings theme dark
                  secure-dict write --app com.example.app --name settings launches 3 \\
                      --type int
                  secure-dict write --app com.example.app expires now --type date
                  secure-dict write --app com.example.app apiToken -     (asks for it)
                  printf %s "$TOKEN" | secure-dict write --app com.example.app apiToken -
                  base64 key.bin | secure-dict write --app com.example.app key - --type data
                """)

        @Argument(help: ArgumentHelp("The key to set.", valueName: "KEY"))
        var key: String

        @Argument(
            help: ArgumentHelp(
                "The value, or '-' to read it from standard input (keeps secrets out of the process list).",
                valueName: "VALUE"))
        var value: String

        @OptionGroup var dictionary: DictionaryOptions

        @Option(
            help: ArgumentHelp(
                "The value's type. Default: the type the key holds, or string for a new key.",
                valueName: "TYPE"))
        var type: ValueType?

        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if value != "-", let type { _ = try type.value(from: value) }
        }

        func perform() throws {
            let text = value == "-" ? try readText() : value
            let what = value == "-" ? "the value on standard input" : "VALUE"
            let location = dictionary.location(global)
            let opened = try location.open()
            // Inside update { }, so that the type is the one stored when the write lands.
            do {
                try opened.update { entries in
                    let resolved = try type ?? Self.keptType(of: entries[key])
                    do {
                        entries[key] = try resolved.value(from: text, what: what)
                    } catch let error as ValidationError where type == nil {
                        throw CommandFailure.usage(
                            """
                            the key holds \(resolved.article), which write keeps without --type: \(error.message); \
                            give --type to store another type
                            """)
                    }
                }
            } catch SecureDictionaryError.tooLarge(let size, let limit) {
                // The input is what does not fit, as for import: exit 4, not a keyring error.
                throw CommandFailure.inputOutput(
                    """
                    \(what) is too large: with it, \(location.description) would take \(size) bytes, more than \
                    the limit of \(limit) (raise it with --maximum-size BYTES); nothing was written
                    """)
            }
        }

        /// The type a VALUE given without `--type` is parsed as: the stored value's.
        private static func keptType(of stored: PropertyListValue?) throws(CommandFailure) -> ValueType {
            switch stored {
            case nil, .string: .string
            case .integer, .unsignedInteger: .int
            case .real: .real
            case .bool: .bool
            case .date: .date
            case .data: .data
            case .array: throw .usage("the key holds an array: give --type to replace it with one value")
            case .dictionary: throw .usage("the key holds a dictionary: give --type to replace it with one value")
            }
        }

        /// The text of the value from standard input: a hidden prompt on a terminal, else all of it.
        private func readText() throws(CommandFailure) -> String {
            if Terminal.standardInputIsTerminal {
                let kind = type.map { "\($0.rawValue), " } ?? ""
                guard let line = Terminal.readHiddenLine(prompt: "Value (\(kind)not shown): ") else {
                    throw .usage("no value was entered")
                }
                return line
            }
            let data = try Terminal.readStandardInput()
            guard var input = String(validating: data, as: UTF8.self) else {
                throw .inputOutput("standard input is not UTF-8 text (give data as base64 with --type data)")
            }
            // One final line break ("\n" or "\r\n", a single Character in Swift) is not part of it.
            if input.hasSuffix("\n") || input.hasSuffix("\r\n") { input.removeLast() }
            return input
        }
    }
}
