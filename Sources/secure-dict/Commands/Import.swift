import ArgumentParser
import FoundationEssentials
import Glibc
import SecureDictionary

extension SecureDict {
    struct Import: ReportingCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Load a dictionary from a file written by 'export'.",
            discussion: """
                FILE is typed JSON or a binary property list (as 'export' writes them; the \
                format is recognised by its content). XML property lists are not read: \
                convert one first, e.g. 'plutil -convert binary1 FILE' on a Mac, or with \
                Python's plistlib. Binary property lists are decoded with SecureDictionary's \
                own hardened reader, and the whole import is one keyring write: all of it or \
                nothing. FILE is refused before it is parsed when it is larger than 4 times the \
                dictionary size limit (16 MiB), and its entries are checked against that limit \
                and the nesting limit before the keyring is touched. Keys that JSON would merge \
                (the same text, or the same text in Unicode canonical form) are refused, never \
                merged.

                --replace makes the dictionary exactly FILE's entries; --merge adds FILE's \
                entries to it, replacing keys it already has. One of them is required when the \
                dictionary already has entries. The dictionary is created if needed. The tool \
                prints nothing on success.

                Examples:
                  secure-dict import --app com.example.app backup.json --replace
                  secure-dict import --app com.example.app --name settings \\
                      settings.plist --merge
                  secure-dict export --app com.old.app | secure-dict import --app com.new.app -
                """)

        @Argument(help: ArgumentHelp("The file to read ('-' for standard input).", valueName: "FILE"))
        var file: String

        @OptionGroup var dictionary: DictionaryOptions

        @Flag(help: "How to combine FILE with entries the dictionary already has.")
        var mode: ImportMode?

        @OptionGroup var global: GlobalOptions

        func perform() throws {
            let location = dictionary.location(global)
            let imported = try readEntries(maximumSize: location.options.maximumSize)
            try Self.checkStorable(imported, from: file, maximumSize: location.options.maximumSize)
            let opened = try location.open()
            struct NeedsMode: Error { let count: Int }
            do {
                try opened.update { entries in
                    switch mode {
                    case .replace: entries.dictionary = imported
                    case .merge: entries.dictionary.merge(imported) { _, new in new }
                    case nil:
                        guard entries.isEmpty else { throw NeedsMode(count: entries.count) }
                        entries.dictionary = imported
                    }
                }
            } catch let error as NeedsMode {
                throw ValidationError(
                    """
                    \(location.description) already has \(error.count) \(error.count == 1 ? "entry" : "entries"): \
                    pass --merge to add FILE's entries to them, or --replace to replace them
                    """)
            }
        }

        /// The largest FILE import reads: typed JSON takes more room than the binary property
        /// list it becomes, so 4 × the dictionary size limit; anything larger cannot be
        /// imported and is refused before it is parsed (or, from a pipe, read to the end).
        static func readLimit(maximumSize: Int) -> Int { maximumSize.multipliedReportingOverflow(by: 4).partialValue }

        /// Refuses entries that the keyring write would refuse (too deep, too large) as a
        /// problem with FILE, before the keyring is touched.
        private static func checkStorable(
            _ entries: [String: PropertyListValue], from file: String, maximumSize: Int
        ) throws(CommandFailure) {
            let source = file == "-" ? "standard input" : file
            do {
                _ = try PropertyListBlob.encode(entries, maximumSize: maximumSize)
            } catch {
                let reason =
                    switch error {
                    case .invalidValue(let reason): reason
                    case .tooLarge(let size, let limit): "its entries take \(size) bytes, more than the limit of \(limit)"
                    default: "\(error)"
                    }
                throw .inputOutput("\(source) holds a dictionary SecureDictionary cannot store: \(reason)")
            }
        }

        /// FILE's entries, as JSON or binary property list.
        private func readEntries(maximumSize: Int) throws(CommandFailure) -> [String: PropertyListValue] {
            let source = file == "-" ? "standard input" : file
            let limit = Self.readLimit(maximumSize: maximumSize)
            let tooLarge = "it is larger than import reads (\(limit) bytes, 4 × the dictionary size limit)"
            let data: Data
            if file == "-" {
                data = try Terminal.readStandardInput(limit: limit, tooLarge: "standard input: \(tooLarge)")
            } else {
                var status = stat()
                if stat(file, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR {
                    throw .inputOutput("cannot read \(file): it is a directory")
                }
                let input: FileDescriptor
                do {
                    input = try FileDescriptor.open(file, O_RDONLY)
                } catch {
                    throw .inputOutput("cannot read \(file): \(error)")
                }
                defer { try? input.close() }
                // By size first, for a regular file: nothing is read when it is too large.
                if fstat(input.rawValue, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG,
                    Int(status.st_size) > limit
                {
                    throw .inputOutput("cannot import \(file): \(tooLarge)")
                }
                data = try Terminal.read(input, source: file, limit: limit, tooLarge: "cannot import \(file): \(tooLarge)")
            }
            if data.starts(with: Data("bplist".utf8)) {
                do {
                    return try PropertyListBlob.decode(data, maximumSize: maximumSize)
                } catch {
                    let reason =
                        switch error {
                        case .corrupt(let reason): reason
                        case .unsupportedFormatVersion(let version): "unsupported format version \(version)"
                        case .tooLarge(let size, let limit): "\(size) bytes, more than the limit of \(limit)"
                        default: "\(error)"
                        }
                    throw .inputOutput("\(source) is not a property list SecureDictionary can read: \(reason)")
                }
            }
            if data.drop(while: { [0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }).first == UInt8(ascii: "<") {
                throw .inputOutput(
                    """
                    \(source) is an XML property list, which import does not read: convert it to a binary \
                    property list first (e.g. plutil -convert binary1 FILE) or export it as JSON
                    """)
            }
            return try TypedJSON.decode(data, source: source)
        }
    }
}

/// `--merge` or `--replace`.
enum ImportMode: String, EnumerableFlag {
    case merge, replace

    static func help(for value: ImportMode) -> ArgumentHelp? {
        switch value {
        case .merge: "Add FILE's entries to the dictionary's, replacing keys it already has."
        case .replace: "Make the dictionary exactly FILE's entries (keys not in FILE are removed)."
        }
    }
}
