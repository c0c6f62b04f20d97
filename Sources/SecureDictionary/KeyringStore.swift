/// Where a ``SecureDictionary`` keeps its one item: the seam between the dictionary and the keyring.
///
/// ```swift
/// // Production: the Secret Service (gnome-keyring, KWallet, KeePassXC…) through libsecret.
/// let settings = try SecureDictionary(name: "settings")
/// // Unit tests: an in-memory store that can also fail on purpose.
/// let store = InMemoryKeyringStore()
/// let cache = try SecureDictionary(name: "cache", options: .init(store: store))
/// ```
///
/// A store moves opaque bytes; encoding, size limits, locking and caching are the
/// dictionary's job. Implementations must be thread-safe, must return within `timeout`, and
/// must report failures as ``SecureDictionaryError`` — above all, `load` returns `nil` only
/// when an *unlocked* store positively holds no such item, and throws
/// ``SecureDictionaryError/locked`` when it cannot tell.
public protocol KeyringStore: AnyObject, Sendable {
    /// The stored secret of `item`, or `nil` when the unlocked collection has no such item.
    ///
    /// - Throws: ``SecureDictionaryError/locked``, ``SecureDictionaryError/ambiguous(count:)``,
    ///   ``SecureDictionaryError/timedOut``, ``SecureDictionaryError/serviceUnavailable(reason:)``…
    func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> [UInt8]?

    /// Creates `item`, or replaces its secret, with `secret`.
    ///
    /// - Throws: as `load`. After ``SecureDictionaryError/timedOut``,
    ///   ``SecureDictionaryError/connectionLost`` or ``SecureDictionaryError/cancelled`` the
    ///   write may or may not have happened.
    func store(_ secret: [UInt8], for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError)

    /// Removes `item`; returns whether there was one.
    func delete(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> Bool

    /// The SecureDictionary items in `collection`, of one application or (`nil`) of all,
    /// sorted by item name. Items whose attributes do not follow the contract are left out.
    func listItems(applicationID: String?, collection: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [KeyringItemListing]

    /// Whether other processes see the same items. `true` for the Secret Service, `false` in
    /// memory. Either way, every write first checks the stored item, so a change made by
    /// someone else is merged, never overwritten.
    var isSharedBetweenProcesses: Bool { get }
}

/// One item found by ``KeyringStore/listItems(applicationID:collection:timeout:)``.
public struct KeyringItemListing: Sendable, Hashable {
    public let item: KeyringItem
    /// Whether its secret cannot be read now (the collection is locked).
    public let isLocked: Bool

    public init(item: KeyringItem, isLocked: Bool) {
        self.item = item
        self.isLocked = isLocked
    }

    /// The listing described by stored attributes, or `nil` when they do not follow the
    /// contract (a valid application ID and name, and `service` equal to the item name).
    public init?(attributes: [String: String], collection: KeyringCollection, isLocked: Bool) {
        guard attributes["xdg:schema"] == KeyringItem.schemaName,
              let application = attributes["application"], let dictionary = attributes["dictionary"],
              let item = try? KeyringItem(dictionaryName: dictionary.isEmpty ? nil : dictionary,
                                          applicationID: application, collection: collection),
              attributes["service"] == item.name
        else { return nil }
        self.init(item: item, isLocked: isLocked)
    }
}

/// A Secret Service collection, named by alias.
///
/// ```swift
/// let options = SecureDictionary.Options(collection: .session)   // forgotten at logout
/// ```
public struct KeyringCollection: Sendable, Hashable, CustomStringConvertible {
    /// The alias, e.g. `default` or `session`.
    public let alias: String

    public init(alias: String) { self.alias = alias }

    /// The user's default collection (gnome-keyring: "login"), kept on disk.
    public static let `default` = KeyringCollection(alias: "default")
    /// gnome-keyring's in-memory collection, gone when the daemon stops; handy in tests.
    public static let session = KeyringCollection(alias: "session")

    public var description: String { alias }
}

/// One SecureDictionary item in the keyring: what `secret-tool search` sees.
///
/// The contract (also in the README): label and `service` attribute are ``name``;
/// attributes `application` = ``applicationID``, `dictionary` = ``dictionaryName``
/// (empty for the default dictionary) and `xdg:schema` = ``schemaName``.
public struct KeyringItem: Sendable, Hashable, CustomStringConvertible {
    /// The value of the `xdg:schema` attribute of every SecureDictionary item.
    public static let schemaName = "io.github.securedictionary.Dictionary"
    /// The separator between application ID and dictionary name in an item name.
    public static let marker = "__SecureDictionary__"

    /// `<applicationID>.__SecureDictionary__.<dictionaryName>`, or without the last part
    /// for the default dictionary.
    public let name: String
    public let applicationID: String
    /// The dictionary's name; empty for the default dictionary.
    public let dictionaryName: String
    public let collection: KeyringCollection

    /// Validates the names (see ``SecureDictionary/init(name:applicationID:options:)``).
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
        ["service": name, "application": applicationID, "dictionary": dictionaryName,
         "xdg:schema": Self.schemaName]
    }

    public var description: String { "\(name) in collection '\(collection.alias)'" }
}
