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
/// A key's components joined by `.` name an entry (<doc:SecureDictionaryConfiguration#Keys>);
/// a value converts only to the type it is stored as, numbers excepted, else a read throws
/// `SecureDictionaryError.typeMismatch(expected:found:)` (<doc:SecureDictionaryConfiguration#Types>).
/// How reads, fetches and watches behave: <doc:SecureDictionaryConfiguration>.
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
    /// `nil` when there is none. No entry it does not read on its way is copied.
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
        try DictionarySnapshot(providerName: providerName, entries: dictionary.loadedEntries).value(forKey: key, type: type)
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

    /// The dictionary's entries now, values marked secret: it holds the dictionary's memory of
    /// this moment (wiped once released), so making it copies no entry.
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
