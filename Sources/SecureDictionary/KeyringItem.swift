/// One SecureDictionary item in the keyring: what `secret-tool search` sees, as
/// <doc:TheStoredItem> lays it out.
public struct KeyringItem: Sendable, Hashable, CustomStringConvertible {
    /// The value of the `xdg:schema` attribute of every SecureDictionary item.
    public static let schemaName = "io.github.securedictionary.Dictionary"
    /// The separator between application ID and dictionary name in an item name.
    public static let marker = "__SecureDictionary__"

    /// `<applicationID>.__SecureDictionary__.<dictionaryName>`, or without the last part
    /// for the default dictionary.
    public let name: String
    /// The application the dictionary belongs to (a reverse-DNS name, by default the main
    /// bundle's or the executable's).
    public let applicationID: String
    /// The dictionary's name; empty for the default dictionary.
    public let dictionaryName: String
    /// The collection the item is in.
    public let collection: KeyringCollection

    /// The item of a dictionary, its names validated (see ``SecureDictionary/init(name:applicationID:options:)``).
    ///
    /// ```swift
    /// let item = try KeyringItem(dictionaryName: "tokens", applicationID: "com.example.app")
    /// print(item.name)   // com.example.app.__SecureDictionary__.tokens
    /// ```
    ///
    /// - Throws: ``SecureDictionaryError/invalidName(reason:)``.
    public init(dictionaryName: String?, applicationID: String, collection: KeyringCollection = .default)
        throws(SecureDictionaryError)
    {
        try NameRules.validate(applicationID, what: "application ID")
        if let dictionaryName { try NameRules.validate(dictionaryName, what: "dictionary name") }
        try NameRules.validate(collection.alias, what: "collection alias")
        self.applicationID = applicationID
        self.dictionaryName = dictionaryName ?? ""
        self.collection = collection
        let base = "\(applicationID).\(Self.marker)"
        self.name = dictionaryName.map { "\(base).\($0)" } ?? base
    }

    /// The attributes stored with the item, as `secret-tool` shows them.
    public var attributes: [String: String] {
        [
            "service": name, "application": applicationID, "dictionary": dictionaryName,
            "xdg:schema": Self.schemaName,
        ]
    }

    /// The item name and its collection's alias.
    public var description: String { "\(name) in collection '\(collection.alias)'" }
}
