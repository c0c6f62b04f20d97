import SecureDictionary

/// Which entry of a dictionary a configuration key names: the mapping documented in
/// <doc:SecureDictionaryConfiguration#Keys>.
///
/// ```swift
/// EntryLookup.value(for: ["database", "password"], in: entries)
/// // entries["database.password"], or else the "password" of the dictionary entries["database"]
/// ```
///
/// The key's components joined by `.` name an entry. Where no entry has that whole name, a
/// stored dictionary continues it: the longest leading part that names an entry holding a
/// dictionary is looked up there, with the rest of the components, by the same rule.
enum EntryLookup {
    /// The value that `components` name in `entries`, or `nil` when they name none.
    static func value(for components: some Collection<String>, in entries: [String: PropertyListValue]) -> PropertyListValue? {
        guard !components.isEmpty else { return entries[""] }
        var end = components.endIndex
        while end > components.startIndex {
            if let value = entries[components[..<end].joined(separator: ".")] {
                guard end != components.endIndex else { return value }
                if case .dictionary(let nested) = value, let found = self.value(for: components[end...], in: nested) {
                    return found
                }
            }
            end = components.index(end, offsetBy: -1)
        }
        return nil
    }

    /// The name a key is looked up and reported under (`LookupResult.encodedKey`).
    static func entryName(for components: [String]) -> String { components.joined(separator: ".") }

    /// The entries whose change can change what `components` name: the whole name and every
    /// leading part of it (a dictionary stored there may hold the rest).
    static func entryNames(for components: [String]) -> Set<String> {
        guard !components.isEmpty else { return [""] }
        return Set((1...components.count).map { components[..<$0].joined(separator: ".") })
    }
}
