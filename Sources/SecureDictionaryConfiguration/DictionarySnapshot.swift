import Configuration
import SecureDictionary

/// The entries of a dictionary at one moment, as a `ConfigSnapshot`: what
/// ``SecureDictionaryProvider/snapshot()`` returns and ``SecureDictionaryProvider`` reads
/// through.
///
/// ```swift
/// let snapshot = DictionarySnapshot(providerName: provider.providerName, entries: dictionary.snapshot)
/// let password = try snapshot.value(forKey: ["database", "password"], type: .string).value  // marked secret
/// ```
///
/// Every value it returns is marked secret. Its `description`, `debugDescription` and
/// mirror show the provider's name and the number of entries, never a key or a value.
struct DictionarySnapshot: ConfigSnapshot, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    let providerName: String
    let entries: [String: PropertyListValue]

    /// The value `key` names (<doc:SecureDictionaryConfiguration#Keys>), as `type`
    /// (<doc:SecureDictionaryConfiguration#Types>), marked secret; `nil` when it names none.
    ///
    /// - Throws: `SecureDictionaryError.typeMismatch(expected:found:)` when the value is
    ///   stored as another type.
    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws(SecureDictionaryError) -> LookupResult {
        let encodedKey = EntryLookup.entryName(for: key.components)
        guard let stored = EntryLookup.value(for: key.components, in: entries) else {
            return LookupResult(encodedKey: encodedKey, value: nil)
        }
        let content = try ConfigContentConversion.content(of: stored, as: type)
        return LookupResult(encodedKey: encodedKey, value: ConfigValue(content, isSecret: true))
    }

    var description: String { "\(providerName)[\(entries.count) values]" }
    var debugDescription: String { description }
    var customMirror: Mirror { Mirror(self, children: ["providerName": providerName, "count": entries.count]) }
}
