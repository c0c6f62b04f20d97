/// One item found by ``KeyringStore/listItems(applicationID:collection:timeout:)``.
///
/// ```swift
/// for listing in try SecureDictionary.items(applicationID: "com.example.app") where !listing.isLocked {
///     print(listing.item.dictionaryName)
/// }
/// ```
public struct KeyringItemListing: Sendable, Hashable {
    /// The dictionary's item.
    public let item: KeyringItem
    /// Whether its secret cannot be read now (the collection is locked).
    public let isLocked: Bool

    /// A listing of `item`, as a store of your own returns it from `listItems`.
    public init(item: KeyringItem, isLocked: Bool) {
        self.item = item
        self.isLocked = isLocked
    }

    /// The listing described by stored attributes, or `nil` when they do not follow the
    /// contract (a valid application ID and name, and `service` equal to the item name).
    public init?(attributes: [String: String], collection: KeyringCollection, isLocked: Bool) {
        guard attributes["xdg:schema"] == KeyringItem.schemaName,
            let application = attributes["application"], let dictionary = attributes["dictionary"],
            let item = try? KeyringItem(
                dictionaryName: dictionary.isEmpty ? nil : dictionary,
                applicationID: application, collection: collection),
            attributes["service"] == item.name
        else { return nil }
        self.init(item: item, isLocked: isLocked)
    }
}
