import FoundationEssentials
import SecureDictionary

/// One dictionary in the keyring, and the ways the commands open it.
struct DictionaryLocation {
    let applicationID: String
    let name: String?
    let options: SecureDictionary.Options

    /// E.g. `dictionary 'settings' of com.example.app`, for messages.
    var description: String {
        let which = name.map { "dictionary \(quotedName($0))" } ?? "the default dictionary"
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
            case .tooLarge(let size, let limit):
                // Stored with a higher limit (a program's raised Options.maximumSize): a read,
                // which needs the limit raised, not less data. More than a dictionary can
                // store is exit 4, as for write, import and adopt (README).
                throw .inputOutput(
                    "\(description) is stored as \(size) bytes, more than the limit of \(limit): use it with "
                        + "--maximum-size \(size) (in a program, raise Options.maximumSize); nothing was changed")
            default:
                throw .keyring(error)
            }
        }
    }

    /// Opens the dictionary, which must exist (exit 1 otherwise). `key`: the KEY the command
    /// was given, which may be the name of a dictionary when `--name` was forgotten.
    func openExisting(key: String? = nil) throws(CommandFailure) -> SecureDictionary {
        let dictionary = try open()
        // A loaded item with entries exists; an empty one may be an empty item or no item.
        if dictionary.isEmpty {
            let names = try existingNames()
            if !names.contains(name ?? "") {
                throw notFound(among: names, key: key)
            }
        }
        return dictionary
    }

    /// The names of the application's dictionaries (`""` for the default one), listed from
    /// their attributes (even when they are locked).
    func existingNames() throws(CommandFailure) -> [String] {
        do {
            return try SecureDictionary.names(applicationID: applicationID, options: options)
        } catch {
            throw .keyring(error)
        }
    }

    /// "No such dictionary", with the dictionary that was meant when one is close (`names`: the
    /// application's, from ``existingNames()``).
    func notFound(among names: [String], key: String? = nil) -> CommandFailure {
        let named = names.filter { !$0.isEmpty }.sorted()
        let hint: String
        if name == nil, let key, named.contains(key) {
            hint = "; \(applicationID) has a dictionary named \(quotedName(key)): did you mean --name \(shellQuoted(key))?"
        } else if let name, let meant = Suggestion.closest(to: name, among: named) {
            hint = "; did you mean --name \(shellQuoted(meant))?"
        } else if name == nil, !named.isEmpty {
            let list = named.prefix(5).map(quotedName).joined(separator: ", ") + (named.count > 5 ? ", …" : "")
            hint = "; \(applicationID) has only named dictionaries (\(list)): give one with --name"
        } else if names.isEmpty, let meant = similarApplicationID() {
            hint = "; did you mean --app \(shellQuoted(meant))?"
        } else {
            hint = " (see 'secure-dict list')"
        }
        return .notFound("no such dictionary: \(description)\(hint)")
    }

    /// "No such key", naming the key the command was given (its user typed it: a key is not
    /// a value) and the command that lists the keys there are, or the dictionary that was
    /// meant when `key` is the name of one and `--name` was not given.
    func noSuchKey(_ key: String) -> CommandFailure {
        let what = "no such key \(quotedName(key)) in \(description)"
        if name == nil, (try? existingNames())?.contains(key) == true {
            return .notFound(
                """
                \(what); \(applicationID) also has a dictionary named \(quotedName(key)): did you mean \
                --name \(shellQuoted(key))?
                """)
        }
        return .notFound("\(what) (see its keys with 'secure-dict read \(arguments) --keys')")
    }

    /// An application ID close to this one that has dictionaries in the collection, if any.
    private func similarApplicationID() -> String? {
        guard let listings = try? SecureDictionary.items(options: options) else { return nil }
        return Suggestion.closest(to: applicationID, among: Set(listings.map(\.item.applicationID)).sorted())
    }

    private func quotedName(_ name: String) -> String {
        let escaped = VisibleText.escaped(name)
        return escaped.hasPrefix("\"") ? escaped : "'\(escaped)'"
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
