import ArgumentParser
import Foundation
import SecureDictionary

extension SecureDict {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Load a dictionary from a file written by 'export'.",
            discussion: """
                FILE is typed JSON or a binary property list (as 'export' writes them; the \
                format is recognised by its content). XML property lists are not read: \
                convert one first, e.g. 'plutil -convert binary1 FILE' on a Mac, or with \
                Python's plistlib. Binary property lists are decoded with SecureDictionary's \
                own hardened reader, and the whole import is one keyring write: all of it or \
                nothing.

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

        func run() throws {
            try reportingFailures {
                let location = dictionary.location(global)
                let imported = try readEntries(maximumSize: location.options.maximumSize)
                let opened = try location.open()
                defer { opened.forget() }
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
                    throw ValidationError("""
                        \(location.description) already has \(error.count) \(error.count == 1 ? "entry" : "entries"): \
                        pass --merge to add FILE's entries to them, or --replace to replace them
                        """)
                }
            }
        }

        /// FILE's entries, as JSON or binary property list.
        private func readEntries(maximumSize: Int) throws(CommandFailure) -> [String: PropertyListValue] {
            let source = file == "-" ? "standard input" : file
            let data: Data
            if file == "-" {
                data = try Terminal.readStandardInput()
            } else {
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), isDirectory.boolValue {
                    throw .inputOutput("cannot read \(file): it is a directory")
                }
                guard let handle = FileHandle(forReadingAtPath: file) else {
                    throw .inputOutput("cannot read \(file): \(String(cString: strerror(errno)))")
                }
                defer { try? handle.close() }
                data = try Terminal.read(handle, source: file)
            }
            if data.starts(with: Data("bplist".utf8)) {
                do {
                    return try BinaryPropertyListCoding.decode(data, maximumSize: maximumSize)
                } catch {
                    let reason = switch error {
                    case .corrupt(let reason): reason
                    case .unsupportedFormatVersion(let version): "unsupported format version \(version)"
                    case .tooLarge(let size, let limit): "\(size) bytes, more than the limit of \(limit)"
                    default: "\(error)"
                    }
                    throw .inputOutput("\(source) is not a property list SecureDictionary can read: \(reason)")
                }
            }
            if data.drop(while: { [0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }).first == UInt8(ascii: "<") {
                throw .inputOutput("""
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
