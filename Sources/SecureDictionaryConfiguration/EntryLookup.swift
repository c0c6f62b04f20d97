import SecureDictionary

/// Which entry of a dictionary a configuration key names: the mapping documented in
/// <doc:SecureDictionaryConfiguration#Keys>, read one entry at a time.
///
/// `entry` reads one entry by its name (the dictionary's subscript, or a snapshot's): the
/// whole name first, and a shorter one only when the longer names none, so that a lookup
/// copies out of the dictionary's wiped memory only the entries on its way.
enum EntryLookup {
    /// The value that `components` name among the entries `entry` reads, or `nil` when they
    /// name none.
    static func value(
        for components: some Collection<String>, reading entry: (String) -> PropertyListValue?
    ) -> PropertyListValue? {
        guard !components.isEmpty else { return entry("") }
        var end = components.endIndex
        while end > components.startIndex {
            if let value = entry(components[..<end].joined(separator: ".")) {
                guard end != components.endIndex else { return value }
                if case .dictionary(let nested) = value, let found = self.value(for: components[end...], reading: { nested[$0] })
                {
                    return found
                }
            }
            end = components.index(end, offsetBy: -1)
        }
        return nil
    }

    /// The entries whose change can change what `components` name: every leading part of
    /// the name, shortest first, and the whole name (a dictionary stored at a leading part
    /// may hold the rest).
    static func entryNames(for components: [String]) -> [String] {
        guard !components.isEmpty else { return [""] }
        return (1...components.count).map { components[..<$0].joined(separator: ".") }
    }
}
