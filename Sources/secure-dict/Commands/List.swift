import ArgumentParser
import FoundationEssentials
import SecureDictionary
import SecureDictionaryAdoption

extension SecureDict {
    struct List: ReportingCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List the SecureDictionary dictionaries in the keyring.",
            discussion: """
                Shows each dictionary's application, name ('(default)' for the unnamed one), \
                number of entries, and state: 'unlocked', 'locked' (its collection must be \
                unlocked before it can be read: no count then), or 'unreadable' with the reason \
                (the stored item is corrupt or of an unknown format, and 'delete --force' removes \
                it; or larger than --maximum-size, which reads it raised), or \
                'ambiguous' (more than one item carries the name, so none can be read; \
                'delete --force' removes them all). \
                Listing never prints a key or a value. A name holding a character that a \
                terminal would not show as it is (a control character, a line separator, or \
                a bidirectional override such as U+202E) is quoted, with that character \
                escaped as \\uXXXX; --json escapes it the same way. When there are no \
                dictionaries, a line on standard error says so.

                Examples:
                  secure-dict list
                  secure-dict list --app com.example.app
                  secure-dict list --json --collection session
                """)

        @Option(
            name: .customLong("app"),
            help: ArgumentHelp(
                "Only the dictionaries of this application ID. Default: $\(applicationEnvironmentVariable), or else every application.",
                valueName: "ID"))
        var app: String?

        @Flag(
            help: """
                Print a JSON array instead: [{"application": ID, "name": NAME ("" for the default \
                dictionary), "item": ITEM NAME, "state": "unlocked"|"locked"|"unreadable"|"ambiguous", \
                "entries": COUNT or null, "reason": why it is unreadable, or null}].
                """)
        var json = false

        @OptionGroup var global: GlobalOptions

        var applicationID: String? {
            app ?? ProcessInfo.processInfo.environment[applicationEnvironmentVariable].flatMap { $0.isEmpty ? nil : $0 }
        }

        func validate() throws {
            if let applicationID {
                do { _ = try KeyringItem(dictionaryName: nil, applicationID: applicationID) } catch {
                    throw ValidationError("\(error)")
                }
            }
        }

        func perform() throws {
            let options = global.options
            let rows = try SecureDictionary.items(applicationID: applicationID, options: options)
                .map { listing throws(SecureDictionaryError) in try Row(listing, options: options) }
            if json {
                try Terminal.write(try Row.json(rows))
            } else if rows.isEmpty {
                printNote(try noneMessage(options: options))
            } else {
                try Terminal.write(Row.table(rows))
            }
            if let applicationID, !json { adoptableNote(applicationID, options: options).map(printNote) }
        }

        /// Per-key items that libraries wrote for a service named as the application, which
        /// `adopt` can move into a dictionary (their attributes only: no secret is read).
        private func adoptableNote(_ applicationID: String, options: SecureDictionary.Options) -> String? {
            var seen: Set<String> = []
            // The most specific query first: an item counts for one library only.
            let libraries = ForeignLibrary.allCases.sorted {
                $0.items(service: applicationID).attributes.count > $1.items(service: applicationID).attributes.count
            }
            let found = libraries.compactMap { library -> String? in
                let items = library.items(service: applicationID)
                guard let paths = try? SecureDictionary.foreignItemPaths(items, options: options) else { return nil }
                let count = paths.subtracting(seen).count
                seen.formUnion(paths)
                guard count > 0 else { return nil }
                return "\(count) \(library.rawValue) item\(count == 1 ? "" : "s") (adopt them with 'secure-dict adopt --app "
                    + "\(shellQuoted(applicationID)) --from \(library.rawValue) --service \(shellQuoted(applicationID))')"
            }
            return found.isEmpty ? nil : "Also in the keyring, one secret per item: " + found.joined(separator: "; ") + "."
        }

        /// What an empty list says, with the application ID that was meant when `--app` names
        /// none but is close to one that has dictionaries.
        private func noneMessage(options: SecureDictionary.Options) throws -> String {
            let collection = "in collection '\(options.collection.alias)'"
            guard let applicationID else { return "There are no SecureDictionary dictionaries \(collection)." }
            let others = Set(try SecureDictionary.items(options: options).map(\.item.applicationID))
            let meant = Suggestion.closest(to: applicationID, among: others.sorted())
            return "\(VisibleText.escaped(applicationID)) has no dictionaries \(collection)"
                + (meant.map { "; did you mean --app \(shellQuoted($0))?" } ?? ".")
        }
    }
}

/// One line of `list`.
private struct Row: Encodable {
    let application: String
    let name: String
    let item: String
    let state: String
    let entries: Int?
    /// Why an item is unreadable, or `nil`.
    let reason: String?

    /// Opens the item to count its entries, unless it is locked.
    init(_ listing: KeyringItemListing, options: SecureDictionary.Options) throws(SecureDictionaryError) {
        application = listing.item.applicationID
        name = listing.item.dictionaryName
        item = listing.item.name
        var state = listing.isLocked ? "locked" : "unlocked"
        var entries: Int?
        var reason: String?
        if !listing.isLocked {
            do {
                let dictionary = try SecureDictionary(
                    name: name.isEmpty ? nil : name, applicationID: application, options: options)
                entries = dictionary.count
            } catch {
                switch error {
                case .locked: state = "locked"
                case .corrupt(let why):
                    (state, reason) = ("unreadable", "corrupt: \(why)")
                case .unsupportedFormatVersion(let version):
                    (state, reason) = ("unreadable", "unsupported format version \(version)")
                case .tooLarge(let size, let limit):
                    (state, reason) = ("unreadable", "\(size) bytes, above --maximum-size \(limit)")
                case .ambiguous: state = "ambiguous"
                default: throw error
                }
            }
        }
        self.state = state
        self.entries = entries
        self.reason = reason
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(application, forKey: .application)
        try container.encode(name, forKey: .name)
        try container.encode(item, forKey: .item)
        try container.encode(state, forKey: .state)
        try container.encode(entries, forKey: .entries)  // null when unknown, not left out
        try container.encode(reason, forKey: .reason)
    }

    private enum CodingKeys: String, CodingKey { case application, name, item, state, entries, reason }

    static func json(_ rows: [Row]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(rows), as: UTF8.self)
        return Data((VisibleText.escapingJSON(json) + "\n").utf8)
    }

    static func table(_ rows: [Row]) -> String {
        let header = ["APPLICATION", "NAME", "ENTRIES", "STATE"]
        let cells = rows.map { row in
            [
                VisibleText.escaped(row.application), row.name.isEmpty ? "(default)" : VisibleText.escaped(row.name),
                row.entries.map(String.init) ?? "-", row.state + (row.reason.map { " (\($0))" } ?? ""),
            ]
        }
        let widths = header.indices.map { column in ([header] + cells).map { $0[column].count }.max()! }
        return ([header] + cells).map { line in
            line.enumerated().map { column, cell in
                column == line.count - 1 ? cell : cell.padded(to: widths[column] + 2)
            }.joined()
        }.joined(separator: "\n") + "\n"
    }
}
