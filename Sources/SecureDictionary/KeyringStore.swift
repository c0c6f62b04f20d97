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
/// A store moves opaque bytes, always as ``SecretBytes`` (which says how to read and keep
/// them). Encoding, size limits, locking and caching are the dictionary's job.
/// Implementations must be thread-safe, must return within `timeout`, and must report
/// failures as ``SecureDictionaryError`` (a failure of their own as
/// ``SecureDictionaryError/store(_:)``, carrying a ``KeyringStoreError``), above all as
/// ``load(_:timeout:)`` says.
public protocol KeyringStore: AnyObject, Sendable {
    /// The stored secret of `item`, or `nil` only when an *unlocked* store positively holds no
    /// such item; when it cannot tell, it throws ``SecureDictionaryError/locked``.
    ///
    /// - Throws: ``SecureDictionaryError/locked``, ``SecureDictionaryError/ambiguous(count:)``,
    ///   ``SecureDictionaryError/timedOut``, ``SecureDictionaryError/serviceUnavailable(reason:)``…
    func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes?

    /// Creates `item`, or replaces its secret, with `secret` (read or kept as ``SecretBytes`` says).
    ///
    /// - Throws: as `load`; after ``SecureDictionaryError/timedOut``, `connectionLost` or
    ///   `cancelled` the write may or may not have happened.
    func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError)

    /// Removes `item`; returns whether there was one.
    func delete(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> Bool

    /// The SecureDictionary items in `collection`, of one application or (`nil`) of all,
    /// sorted by item name. Items whose attributes do not follow the contract are left out.
    func listItems(applicationID: String?, collection: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [KeyringItemListing]
}
