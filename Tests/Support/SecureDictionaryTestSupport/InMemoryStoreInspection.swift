public import SecureDictionary

/// What the library's tests read from and plant in an `InMemoryKeyringStore`, for the
/// reliability suite and the benchmark: packages of their own, which see only public symbols.
/// (The tests of this package call the store's own `package` members.) Not for applications.
///
/// ```swift
/// let before = store.recordedCalls.count
/// try dictionary.setValue(1, forKey: "k")
/// let writes = store.recordedCalls.dropFirst(before).filter { $0 != "load" }.count
/// ```
extension InMemoryKeyringStore {
    /// The store's calls so far, in order: `load`, `store`, `delete` or `list`.
    public var recordedCalls: [String] { calls.map(\.rawValue) }

    /// The stored bytes of `item`, as a keyring reader would see them.
    public func storedBlob(of item: KeyringItem) -> [UInt8]? { storedBytes(of: item) }

    /// Plants raw bytes (a hostile blob, say) as if another process had written them; `nil`
    /// removes the item.
    public func plantBlob(_ bytes: [UInt8]?, for item: KeyringItem) { plant(bytes, for: item) }
}
