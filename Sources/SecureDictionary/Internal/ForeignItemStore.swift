/// One keyring item that another library or tool wrote, one secret per key (python `keyring`,
/// keytar, go-keyring, QtKeychain, `secret-tool`…): what adoption reads, retires and, for the
/// way back, writes. Its attributes are not secret (any process of the user can list them).
package struct ForeignItem: Sendable, Equatable {
    /// Where the store finds it (a Secret Service object path).
    package let path: String
    package let attributes: [String: String]
    /// The collection it is in, as the store names it (a Secret Service object path).
    package let collection: String
    /// The provider asks its user before it lets this client read the item (KeePassXC).
    package let needsConfirmation: Bool

    package init(path: String, attributes: [String: String], collection: String, needsConfirmation: Bool = false) {
        self.path = path
        self.attributes = attributes
        self.collection = collection
        self.needsConfirmation = needsConfirmation
    }
}

/// A store that can list, read, remove and write items outside the dictionary contract.
package protocol ForeignItemStore: KeyringStore {
    /// The items of `collection` whose attributes include every one of `attributes`.
    ///
    /// - Throws: ``SecureDictionaryError/locked`` when the collection (or a matching item) is
    ///   locked and cannot be unlocked without a prompt.
    func foreignItems(matching attributes: [String: String], in collection: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [ForeignItem]

    /// The secret of `item` (the caller wipes it).
    func foreignSecret(of item: ForeignItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes

    func deleteForeign(_ item: ForeignItem, timeout: Duration) throws(SecureDictionaryError)

    /// Creates an item (replacing one with the same attributes), of `contentType`.
    func createForeign(
        attributes: [String: String], label: String, secret: SecretBytes, contentType: String,
        in collection: KeyringCollection, timeout: Duration
    ) throws(SecureDictionaryError) -> ForeignItem
}
