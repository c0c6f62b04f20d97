import ArgumentParser
import Foundation
import SecureDictionary

extension SecureDict {
    struct Write: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set the value of one key (creating the dictionary if needed).",
            discussion: """
                VALUE is a string unless --type says otherwise. Give '-' as VALUE to read it \
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

        @Argument(help: ArgumentHelp(
            "The value, or '-' to read it from standard input (keeps secrets out of the process list).",
            valueName: "VALUE"))
        var value: String

        @OptionGroup var dictionary: DictionaryOptions

        @Option(help: ArgumentHelp("The value's type.", valueName: "TYPE"))
        var type: ValueType = .string

        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if value != "-" { _ = try type.value(from: value) }
        }

        func run() throws {
            try reportingFailures {
                let newValue = try value == "-" ? readValue() : type.value(from: value)
                let location = dictionary.location(global)
                let opened = try location.open()
                defer { opened.forget() }
                try opened.setValue(newValue, forKey: key)
            }
        }

        /// The value from standard input: a hidden prompt on a terminal, else all of it.
        private func readValue() throws -> PropertyListValue {
            let text: String
            if Terminal.standardInputIsTerminal {
                guard let line = Terminal.readHiddenLine(prompt: "Value (\(type.rawValue), not shown): ") else {
                    throw ValidationError("no value was entered")
                }
                text = line
            } else {
                let data = try Terminal.readStandardInput()
                guard var input = String(data: data, encoding: .utf8) else {
                    throw ValidationError("standard input is not UTF-8 text (give data as base64 with --type data)")
                }
                // One final line break ("\n" or "\r\n", a single Character in Swift) is not part of it.
                if input.hasSuffix("\n") || input.hasSuffix("\r\n") { input.removeLast() }
                text = input
            }
            return try type.value(from: text, what: "the value on standard input")
        }
    }
}
