import Configuration
import SecureDictionary

/// The entries of a dictionary at one moment, as a `ConfigSnapshot`: what
/// ``SecureDictionaryProvider/snapshot()`` returns and ``SecureDictionaryProvider/watchSnapshot(updatesHandler:)``
/// gives.
///
/// It keeps the dictionary's generation of that moment alive (wiped once nothing holds it) and
/// reads one entry per lookup out of it: making a snapshot copies no entry.
struct DictionarySnapshot: ConfigSnapshot, CustomStringConvertible, CustomReflectable {
    let providerName: String
    let entries: SecureDictionary.Entries

    /// As ``SecureDictionaryProvider/value(forKey:type:)``, from this snapshot's generation.
    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws(SecureDictionaryError) -> LookupResult {
        let encodedKey = key.components.joined(separator: ".")  // the whole name, as `LookupResult` reports it
        guard let stored = EntryLookup.value(for: key.components, reading: { entries[$0] }) else {
            return LookupResult(encodedKey: encodedKey, value: nil)
        }
        let content = try ConfigContentConversion.content(of: stored, as: type)
        return LookupResult(encodedKey: encodedKey, value: ConfigValue(content, isSecret: true))
    }

    var description: String { "\(providerName)[\(entries.count) values]" }
    var customMirror: Mirror { Mirror(self, children: ["providerName": providerName, "count": entries.count]) }
}
