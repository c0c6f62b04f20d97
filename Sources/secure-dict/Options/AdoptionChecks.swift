import SecureDictionary
import SecureDictionaryAdoption
import SecureDictionaryFileStore

/// What `adopt` and `export-items` check around the library's call: that the dictionary is
/// in the keyring, where the other library's items are, and, when no item matched, which
/// services that library's items do have.
extension ForeignItemOptions {
    /// `options` with the keyring as the store: `--store keyring`, or `--store auto` where it
    /// chooses the keyring. Other libraries' items are keyring items, and the library's
    /// adoption keeps the dictionary beside them.
    ///
    /// - Throws: a usage error for a store of files (not "no usable keyring", which is false
    ///   while one runs); `--store auto`'s own error where nothing answers.
    func inKeyring(_ options: SecureDictionary.Options, command: String) throws(CommandFailure) -> SecureDictionary.Options {
        var options = options
        switch options.store {
        case is SecretServiceStore:
            return options
        case let automatic as AutomaticStore:
            let choice: AutomaticStore.Choice
            do {
                choice = try automatic.choose(timeout: options.timeout)
            } catch {
                throw .keyring(error)
            }
            guard choice.chosen == .secretService else {
                throw .usage(
                    "\(command) works in the keyring, where other libraries' items are, and --store auto chose \(choice) "
                        + "here: run it where the keyring answers")
            }
            options.store = SecretServiceStore.shared
            return options
        default:
            throw .usage(
                "\(command) works in the keyring, where other libraries' items are: use --store keyring (the default), "
                    + "not --store \(StoreOptions.Kind.from(options.store))")
        }
    }

    /// "Nothing matched", naming the services that the library's items have, with the one
    /// meant when it is close (a mistyped `--service` must not adopt nothing and exit 0).
    func nothingMatched(_ options: SecureDictionary.Options) -> String {
        let collection = "in collection '\(items.collection.alias)'"
        guard let library, let service else {
            let pairs = matches.sorted().joined(separator: ", ")
            return "no items have \(pairs) \(collection)"
        }
        let what = "no \(library.rawValue) items with service \(shellQuoted(service)) \(collection)"
        // The attribute that holds the service, and the library's other attributes.
        let serviceAttribute = items.attributes.first { $0.value == service }?.key
        var others = items.attributes
        if let serviceAttribute { others[serviceAttribute] = nil }
        let found =
            serviceAttribute.flatMap { attribute in
                try? SecureDictionary.foreignItemAttributes(matching: others, in: items.collection, options: options)
                    .compactMap { $0[attribute] }
            } ?? []
        let services = Set(found).sorted()
        guard !services.isEmpty else { return "\(what), nor any other \(library.rawValue) item" }
        let shown = services.prefix(10).map(shellQuoted).joined(separator: ", ") + (services.count > 10 ? ", …" : "")
        let meant = Suggestion.closest(to: service, among: services).map { " (did you mean --service \(shellQuoted($0))?)" }
        return "\(what); its items have the services \(shown)\(meant ?? "")"
    }
}

extension StoreOptions.Kind {
    /// The `--store` word of a store, for messages.
    static func from(_ store: any KeyringStore) -> String {
        switch store {
        case is SecretServiceStore: "keyring"
        case is AutomaticStore: "auto"
        case let files as EncryptedFileStore where files.keySource == .secretPortal: "portal"
        case let files as EncryptedFileStore: files.keySource.description.hasPrefix("passphrase") ? "passphrase" : "credential"
        default: "\(type(of: store))"
        }
    }
}
