public import Configuration
public import SecureDictionary

/// A swift-configuration provider over one `SecureDictionary`, whose every value is marked
/// secret.
///
/// ```swift
/// let secrets = try SecureDictionary(name: "server", applicationID: "com.example.server")
/// let config = ConfigReader(providers: [
///     EnvironmentVariablesProvider(),        // DATABASE_PASSWORD=… wins where it is set
///     SecureDictionaryProvider(secrets),     // the entry "database.password" otherwise
/// ])
/// let password = try config.requiredString(forKey: "database.password")
/// ```
///
/// - **Keys**: a configuration key's components joined by `.` name an entry
///   (`database.password`), or a stored dictionary continues the name: see
///   <doc:SecureDictionaryConfiguration#Keys>.
/// - **Types**: a value converts only to the type it is stored as, except numbers (an integer
///   and a real convert into each other when exact); any other asked type throws
///   `SecureDictionaryError.typeMismatch(expected:found:)`: see
///   <doc:SecureDictionaryConfiguration#Types>.
/// - **Secret**: every value it returns is marked secret, so swift-configuration's access
///   logging shows `<REDACTED>` in its place.
/// - **Reads** (`value`, `snapshot`) answer from the dictionary's memory one entry at a time,
///   as its subscript does: a lookup copies out only the entry it names (and the leading
///   parts of the name it tries on the way), never the other entries. `fetchValue` loads the
///   item again first. `watchValue` follows `SecureDictionary.changes(forKey:)` of the entries
///   that can change its value; `watchSnapshot` follows `SecureDictionary.changes()`: every
///   change, whoever made it, this process, another one or another tool.
public struct SecureDictionaryProvider: ConfigProvider, CustomStringConvertible {
    /// The dictionary this provider reads.
    public let dictionary: SecureDictionary

    /// A provider over `dictionary`.
    ///
    /// ```swift
    /// let provider = SecureDictionaryProvider(try SecureDictionary(name: "server"))
    /// ```
    public init(_ dictionary: SecureDictionary) {
        self.dictionary = dictionary
    }

    /// `SecureDictionaryProvider[<item name>]`, as swift-configuration's access reports name it.
    public var providerName: String { "SecureDictionaryProvider[\(dictionary.item.name)]" }

    /// The provider's name; never a key or a value.
    public var description: String { providerName }

    /// The value `key` names, from the dictionary's memory (no keyring call), marked secret;
    /// `nil` when there is none. It reads the dictionary one entry at a time, as its subscript
    /// does: the whole name, then a shorter leading part only when the longer one names no
    /// entry. No other entry is copied.
    ///
    /// ```swift
    /// let port = try provider.value(forKey: ["database", "port"], type: .int).value  // the entry "database.port"
    /// ```
    ///
    /// - Throws: `SecureDictionaryError.typeMismatch(expected:found:)` when the value is
    ///   stored as a type that does not convert to `type`.
    public func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws(SecureDictionaryError) -> LookupResult {
        // One generation for the whole lookup (the name and its leading parts), even while
        // another thread writes; it is read in place, one entry at a time.
        let entries = dictionary.loadedEntries
        return try EntryLookup.result(for: key, as: type) { entries[$0] }
    }

    /// Loads the dictionary again (one keyring read; it decodes only when the item changed,
    /// and tells the dictionary's watchers), then returns the value `key` names, marked secret.
    ///
    /// ```swift
    /// let token = try await provider.fetchValue(forKey: ["api", "token"], type: .string).value
    /// ```
    ///
    /// - Throws: what `SecureDictionary.reload()` throws (`SecureDictionaryError.locked`,
    ///   `SecureDictionaryError.timedOut`…), then as ``value(forKey:type:)``.
    public func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws(SecureDictionaryError) -> LookupResult {
        try await dictionary.async.reload()
        return try value(forKey: key, type: type)
    }

    /// The dictionary's entries now, from memory, as a snapshot whose values are all marked
    /// secret. It holds the dictionary's memory of this moment (wiped once released) and
    /// reads one entry per lookup from it: making it copies no entry.
    ///
    /// ```swift
    /// let snapshot = provider.snapshot()
    /// let user = try snapshot.value(forKey: ["database", "user"], type: .string).value
    /// let password = try snapshot.value(forKey: ["database", "password"], type: .string).value
    /// ```
    public func snapshot() -> any ConfigSnapshot {
        DictionarySnapshot(providerName: providerName, entries: dictionary.loadedEntries)
    }
}
