package import Logging

/// The default ``KeyringStore``: the freedesktop Secret Service (gnome-keyring, KWallet,
/// KeePassXC…) over D-Bus, through libsecret.
///
/// ```swift
/// let settings = try SecureDictionary(name: "settings")   // uses SecretServiceStore.shared
/// ```
///
/// What it promises, whatever the provider does:
/// - every call returns by its deadline (a frozen daemon gives ``SecureDictionaryError/timedOut``);
/// - no unlock dialog is shown unless ``SecureDictionary/Options/unlock`` allows it: a locked
///   collection gives ``SecureDictionaryError/locked``;
/// - secrets travel only through an encrypted transport session (a provider that offers only
///   `plain` gives ``SecureDictionaryError/serviceUnavailable(reason:)``);
/// - calls are serialised, and after the daemon restarts the next call reconnects by itself;
/// - a lookup that finds nothing is "no such item" only if the collection is unlocked;
/// - writers of one item queue for a lock on the D-Bus session bus, in every process that
///   reaches this keyring, and changes are watched through the service's own signals.
public final class SecretServiceStore: KeyringStore, CoordinatedStore, ForeignItemStore {
    /// The store every ``SecureDictionary`` uses unless its options name another.
    public static let shared = SecretServiceStore()

    let client: LibSecretClient

    /// A store with its own connection and call lane. Most programs use ``shared``.
    public init() { client = LibSecretClient() }

    /// A store over `client` (tests inject faults through it).
    init(client: LibSecretClient) { self.client = client }

    public func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes? {
        // A view of the secret libsecret decrypted into its own locked memory: no copy.
        try client.load(item, timeout: timeout)
    }

    public func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        try client.store(secret, for: item, timeout: timeout)
    }

    public func delete(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> Bool {
        try client.delete(item, timeout: timeout)
    }

    public func listItems(applicationID: String?, collection: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [KeyringItemListing]
    {
        try client.listItems(applicationID: applicationID, collection: collection, timeout: timeout)
    }

    /// Opens the service (an encrypted session) and describes it and the collection behind
    /// `collection`'s alias. Shows no prompt and changes nothing.
    package func diagnose(collection: KeyringCollection, timeout: Duration) throws(SecureDictionaryError)
        -> SecretServiceDiagnosis
    {
        try client.diagnose(collection, timeout: timeout)
    }

    package func writerLock(for item: KeyringItem, logger: Logger) -> any ItemWriterLock {
        BusNameWriterLock(item: item, logger: logger)
    }

    package func watchChanges(_ onChange: @escaping @Sendable (KeyringChange) -> Void) -> (any ChangeWatch)? {
        CollectionWatcher(onChange)
    }

    /// Every instance talks to the Secret Service of this process's session bus.
    package var place: String? { "the Secret Service" }

    // MARK: Items outside the contract (adoption)

    package func foreignItems(matching attributes: [String: String], in collection: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [ForeignItem]
    {
        try client.foreignItems(matching: attributes, in: collection, timeout: timeout)
    }

    package func foreignSecret(of item: ForeignItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes {
        try client.foreignSecret(of: item, timeout: timeout)
    }

    package func deleteForeign(_ item: ForeignItem, timeout: Duration) throws(SecureDictionaryError) {
        try client.deleteForeign(item, timeout: timeout)
    }

    package func createForeign(
        attributes: [String: String], label: String, secret: SecretBytes, contentType: String,
        in collection: KeyringCollection, timeout: Duration
    ) throws(SecureDictionaryError) -> ForeignItem {
        try client.createForeign(
            attributes: attributes, label: label, secret: secret, contentType: contentType, in: collection, timeout: timeout)
    }
}
