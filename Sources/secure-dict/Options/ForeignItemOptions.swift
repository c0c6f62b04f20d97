import ArgumentParser
import FoundationEssentials
import SecureDictionary
import SecureDictionaryAdoption

/// The libraries whose per-key items the tool knows (`--from`, `--to`).
enum ForeignLibrary: String, ExpressibleByArgument, CaseIterable {
    case pythonKeyring = "python-keyring"
    case keytar
    case goKeyring = "go-keyring"
    case qtKeychain = "qtkeychain"

    func items(service: String) -> ForeignItems {
        switch self {
        case .pythonKeyring: .pythonKeyring(service: service)
        case .keytar: .keytar(service: service)
        case .goKeyring: .goKeyring(service: service)
        case .qtKeychain: .qtKeychain(service: service)
        }
    }
}

/// Which per-key items: a library's with its service, or attributes and a key attribute.
struct ForeignItemOptions: ParsableArguments {
    @Option(
        name: [.customLong("from"), .customLong("to")],
        help: ArgumentHelp(
            "The library that wrote the items: \(ForeignLibrary.allCases.map(\.rawValue).joined(separator: ", ")) (with --service).",
            valueName: "LIBRARY"))
    var library: ForeignLibrary?

    @Option(help: ArgumentHelp("The service name the library was given (with --from or --to).", valueName: "SERVICE"))
    var service: String?

    @Option(
        name: .customLong("match"),
        help: ArgumentHelp(
            "Instead of a library: an attribute every item has (repeatable), e.g. --match service=my-app.",
            valueName: "ATTR=VALUE"))
    var matches: [String] = []

    @Option(help: ArgumentHelp("With --match: the attribute whose value is each item's key.", valueName: "ATTR"))
    var keyAttribute: String?

    @Option(
        name: .customLong("items-in"),
        help: ArgumentHelp(
            "The collection the items are in, by alias (default: the library's, else 'default').", valueName: "ALIAS"))
    var itemsCollection: String?

    func validate() throws {
        switch (library, matches.isEmpty) {
        case (.some, true):
            guard let service, !service.isEmpty else { throw ValidationError("--from and --to need --service SERVICE") }
        case (nil, false):
            guard keyAttribute?.isEmpty == false else { throw ValidationError("--match needs --key-attribute ATTR") }
            for match in matches where !match.contains("=") {
                throw ValidationError("--match takes ATTR=VALUE, not '\(match)'")
            }
        case (.some, false):
            throw ValidationError("give either a library (--from or --to) or --match, not both")
        case (nil, true):
            throw ValidationError(
                "say which items: --from LIBRARY --service SERVICE, or --match ATTR=VALUE --key-attribute ATTR")
        }
    }

    var items: ForeignItems {
        var items: ForeignItems
        if let library, let service {
            items = library.items(service: service)
        } else {
            let pairs = matches.map { match in
                let parts = match.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                return (String(parts[0]), String(parts[1]))
            }
            items = ForeignItems(attributes: Dictionary(pairs) { _, last in last }, keyAttribute: keyAttribute!)
        }
        if let itemsCollection { items.collection = KeyringCollection(alias: itemsCollection) }
        return items
    }
}
