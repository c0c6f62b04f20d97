import ArgumentParser
import FoundationEssentials
import SecureDictionary

extension SecureDict {
    struct Export: ReportingCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write a whole dictionary to a file or to standard output.",
            discussion: """
                Formats:
                  json          typed JSON (see 'secure-dict --help'); exact; 'import'
                                reads it back
                  binary-plist  the very bytes SecureDictionary stores (bplist00); exact;
                                'import' reads it back, and so do other tools
                  xml-plist     an XML property list for other tools (plutil, plistlib,
                                Xcode); it keeps dates to the whole second only and drops
                                control characters, so 'import' does not read it

                The output holds every secret of the dictionary: a FILE is created readable by \
                you alone (mode 0600) and replaced in one step; a FILE that is a pipe or a \
                device (such as bash's >(gpg -c …)) is written to as it is. A named pipe \
                (mkfifo) that no program opens for reading within --timeout is an error \
                (exit 4), not a wait without end. Binary output is not written to a terminal. \
                Exits with 1 when the dictionary does not exist.

                Examples:
                  secure-dict export --app com.example.app -o backup.json
                  secure-dict export --app com.example.app --name settings \\
                      --format binary-plist -o settings.plist
                  secure-dict export --app com.example.app --format xml-plist | less
                  secure-dict export --app com.example.app -o >(gpg -c -o backup.json.gpg)
                """)

        @OptionGroup var dictionary: DictionaryOptions

        @Option(help: ArgumentHelp("The file format.", valueName: "FORMAT"))
        var format: ExportFormat = .json

        @Option(
            name: [.customShort("o"), .customLong("output")],
            help: ArgumentHelp(
                "The file to write. Default: standard output ('-').", valueName: "FILE"))
        var output: String?

        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if output ?? "-" == "-", format == .binaryPlist, Terminal.standardOutputIsTerminal {
                throw ValidationError("binary-plist output would go to your terminal: use -o FILE or redirect it")
            }
        }

        func perform() throws {
            let location = dictionary.location(global)
            let opened = try location.openExisting()
            let entries = opened.snapshot
            let bytes: Data
            switch format {
            case .json:
                bytes = try TypedJSON.encode(entries)
            case .binaryPlist:
                bytes = try PropertyListBlob.encode(entries, maximumSize: location.options.maximumSize)
            case .xmlPlist:
                bytes = try XMLPropertyList.encode(entries)
                if let loss = XMLPropertyList.loss(in: entries) {
                    printNote("Note: the XML property list \(loss); use --format json or binary-plist for an exact copy.")
                }
            }
            if let output, output != "-" {
                try PrivateFile.write(bytes, to: output, readerDeadline: global.keyring.duration)
            } else {
                try Terminal.write(bytes)
            }
        }
    }
}

/// The formats of `export`.
enum ExportFormat: String, CaseIterable, ExpressibleByArgument {
    case json
    case binaryPlist = "binary-plist"
    case xmlPlist = "xml-plist"
}
