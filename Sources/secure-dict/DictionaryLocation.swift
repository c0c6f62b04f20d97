import SecureDictionary

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One dictionary in the keyring, and the ways the commands open it.
struct DictionaryLocation {
    let applicationID: String
    let name: String?
    let options: SecureDictionary.Options

    /// E.g. `dictionary 'settings' of com.example.app`, for messages.
    var description: String {
        let which = name.map { "dictionary '\($0)'" } ?? "the default dictionary"
        let collection = options.collection == .default ? "" : " in collection '\(options.collection.alias)'"
        return "\(which) of \(applicationID)\(collection)"
    }

    /// The options that name this dictionary on a command line, for advice in messages.
    var arguments: String {
        var words = ["--app", shellQuoted(applicationID)]
        if let name { words += ["--name", shellQuoted(name)] }
        if options.collection != .default { words += ["--collection", shellQuoted(options.collection.alias)] }
        return words.joined(separator: " ")
    }

    /// Opens (loads) the dictionary; it is empty when there is no such item.
    func open() throws(CommandFailure) -> SecureDictionary {
        do {
            return try SecureDictionary(name: name, applicationID: applicationID, options: options)
        } catch {
            switch error {
            case .corrupt, .unsupportedFormatVersion:
                throw .keyring(error, hint: "Remove it with 'secure-dict delete \(arguments) --force' if you do not need it.")
            default:
                throw .keyring(error)
            }
        }
    }

    /// Opens the dictionary, which must exist (exit 1 otherwise).
    func openExisting() throws(CommandFailure) -> SecureDictionary {
        let dictionary = try open()
        // A loaded item with entries exists; an empty one may be an empty item or no item.
        if dictionary.isEmpty, try !exists() {
            throw notFound()
        }
        return dictionary
    }

    /// Whether the item exists (its attributes are listed, even when it is locked).
    func exists() throws(CommandFailure) -> Bool {
        do {
            return try SecureDictionary.names(applicationID: applicationID, options: options).contains(name ?? "")
        } catch {
            throw .keyring(error)
        }
    }

    func notFound() -> CommandFailure {
        .notFound("no such dictionary: \(description) (see 'secure-dict list')")
    }

    func noSuchKey() -> CommandFailure {
        .notFound("no such key in \(description)")
    }
}

/// `word` quoted for a POSIX shell when it needs it.
func shellQuoted(_ word: String) -> String {
    let safe = word.unicodeScalars.allSatisfy { scalar in
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
            || "-_.,:/@%+=".unicodeScalars.contains(scalar)
    }
    guard !safe || word.isEmpty else { return word }
    // Each ' ends the quoted text, adds an escaped quote, and starts quoting again.
    return "'" + word.unicodeScalars.map { $0 == "'" ? "'\\''" : String($0) }.joined() + "'"
}
