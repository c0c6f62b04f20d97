import SecureDictionary

/// A test store that wraps another and passes on every call it does not itself define.
///
/// ```swift
/// final class SlowStore: ForwardingStore {
///     let inner = InMemoryKeyringStore()
///     func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
///         Thread.sleep(forTimeInterval: 0.1)
///         try inner.store(secret, for: item, timeout: timeout)
///     }
/// }
/// ```
protocol ForwardingStore: KeyringStore {
    associatedtype Inner: KeyringStore
    var inner: Inner { get }
}

extension ForwardingStore {
    func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes? {
        try inner.load(item, timeout: timeout)
    }

    func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        try inner.store(secret, for: item, timeout: timeout)
    }

    func delete(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> Bool {
        try inner.delete(item, timeout: timeout)
    }

    func listItems(applicationID: String?, collection: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [KeyringItemListing]
    {
        try inner.listItems(applicationID: applicationID, collection: collection, timeout: timeout)
    }
}
