import Configuration
import SecureDictionary

/// The entries of a dictionary at one moment, as a `ConfigSnapshot`: what
/// ``SecureDictionaryProvider/snapshot()`` returns and ``SecureDictionaryProvider/watchSnapshot(updatesHandler:)``
/// gives.
///
/// ```swift
/// let snapshot = DictionarySnapshot(providerName: provider.providerName, entries: dictionary.loadedEntries)
/// let password = try snapshot.value(forKey: ["database", "password"], type: .string).value  // marked secret
/// ```
///
/// It holds the dictionary's generation of that moment, in the library's wiped memory (the
/// region is wiped once no snapshot or dictionary holds it), and reads one entry per lookup
/// out of it, as the dictionary's subscript does: making a snapshot copies no entry. Every
/// value it returns is marked secret. Its `description`, `debugDescription` and mirror show
/// the provider's name and the number of entries, never a key or a value.
struct DictionarySnapshot: ConfigSnapshot, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let providerName: String
    let entries: SecureDictionary.Entries

    /// The value `key` names (<doc:SecureDictionaryConfiguration#Keys>), as `type`
    /// (<doc:SecureDictionaryConfiguration#Types>), marked secret; `nil` when it names none.
    ///
    /// - Throws: `SecureDictionaryError.typeMismatch(expected:found:)` when the value is
    ///   stored as another type.
    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws(SecureDictionaryError) -> LookupResult {
        try EntryLookup.result(for: key, as: type) { entries[$0] }
    }

    var description: String { "\(providerName)[\(entries.count) values]" }
    var debugDescription: String { description }
    var customMirror: Mirror { Mirror(self, children: ["providerName": providerName, "count": entries.count]) }
}
