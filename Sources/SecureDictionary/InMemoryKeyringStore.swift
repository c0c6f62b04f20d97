import Synchronization

/// A ``KeyringStore`` in memory, for your own unit tests: fast, private to the process, and
/// able to fail on purpose, so that your tests can see what your code does with a locked or
/// silent keyring.
///
/// ```swift
/// let store = InMemoryKeyringStore()
/// let settings = try SecureDictionary(name: "settings", options: .init(store: store))
/// store.failNextCalls(with: .locked, count: 1)
/// #expect(throws: SecureDictionaryError.locked) { try settings.setValue(1, forKey: "a") }
/// #expect(settings["a"] == nil)                          // the cache followed the store
/// ```
///
/// It is not a keyring: no other process reaches it, so two clauses of the contract every
/// store keeps cannot apply: a change by another process reaching ``SecureDictionary/changes()``,
/// and a lock holder killed (the suite `StoreContract` names both). Use it for logic, the real
/// Secret Service for everything about the keyring (<doc:TestingYourApplication>).
public final class InMemoryKeyringStore: KeyringStore {
    /// The kind of a call, as counted by ``calls`` (the library's tests).
    package enum Call: String, Sendable, Hashable { case load, store, delete, list }

    private struct State {
        var items: [KeyringItem: SecretBytes] = [:]
        var lockedCollections: Set<KeyringCollection> = []
        var faults: [Int: (error: SecureDictionaryError, writesAnyway: Bool)] = [:]  // by the 1-based number of the call to fail
        var callCount = 0
        var calls: [Call] = []
    }

    private let state = Mutex(State())

    /// An empty store, unlocked: `SecureDictionary(name: "settings", options: .init(store: InMemoryKeyringStore()))`.
    public init() {}

    /// The name its errors give as the provider that answered.
    package static let providerName = "InMemoryKeyringStore"

    // MARK: Failing on purpose

    /// Makes the next `count` calls of the store (of any kind) throw `error`, as a keyring
    /// that fails would.
    ///
    /// ```swift
    /// store.failNextCalls(with: .timedOut)                       // the next call times out
    /// store.failNextCalls(with: .timedOut, writesAnyway: true)   // a write lands, its answer is lost
    /// ```
    ///
    /// With `writesAnyway`, a failing `store` call writes its bytes before it throws: a write
    /// whose answer was lost, whose outcome the dictionary must treat as unknown.
    public func failNextCalls(with error: SecureDictionaryError, count: Int = 1, writesAnyway: Bool = false) {
        state.withLock { state in
            for offset in 1...max(1, count) {
                state.faults[state.callCount + offset] = (error, writesAnyway)
            }
        }
    }

    /// Makes the call numbered `number` (counting from 1 from now on) throw, as ``failNextCalls(with:count:writesAnyway:)``.
    package func failCall(number: Int, with error: SecureDictionaryError, writesAnyway: Bool = false) {
        state.withLock { $0.faults[$0.callCount + number] = (error, writesAnyway) }
    }

    /// Removes every pending fault.
    package func clearFaults() { state.withLock { $0.faults.removeAll() } }

    /// Locks or unlocks a collection: while locked, every call on it throws
    /// ``SecureDictionaryError/locked``, as a locked keyring's do.
    ///
    /// ```swift
    /// store.setLocked(true)
    /// #expect(throws: SecureDictionaryError.locked) { try SecureDictionary(name: "settings", options: .init(store: store)) }
    /// store.setLocked(false)
    /// ```
    public func setLocked(_ locked: Bool, collection: KeyringCollection = .default) {
        state.withLock { state in
            if locked { state.lockedCollections.insert(collection) } else { state.lockedCollections.remove(collection) }
        }
    }

    // MARK: Inspection (the library's tests)

    /// The calls made so far, in order.
    package var calls: [Call] { state.withLock { $0.calls } }

    /// The stored bytes of `item`, as a keyring reader would see them.
    package func storedBytes(of item: KeyringItem) -> [UInt8]? { state.withLock { $0.items[item]?.array } }

    /// Plants raw bytes, e.g. a hostile blob, as if another process had written them.
    package func plant(_ bytes: [UInt8]?, for item: KeyringItem) {
        let secret = bytes.map { SecretBytes(copying: $0) }
        state.withLock { $0.items[item] = secret }
    }

    // MARK: KeyringStore

    public func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes? {
        try call(.load, collection: item.collection) { $0.items[item] }
    }

    public func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        // A copy of its own: `secret` views the dictionary's pages, which it releases.
        let secret = secret.withUnsafeBytes { SecretBytes(copying: $0) }
        try call(.store, collection: item.collection) { $0.items[item] = secret }
    }

    public func delete(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> Bool {
        try call(.delete, collection: item.collection) { $0.items.removeValue(forKey: item) != nil }
    }

    public func listItems(applicationID: String?, collection: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [KeyringItemListing]
    {
        try call(.list, collection: collection) { state in
            state.items.keys
                .filter { (applicationID == nil || $0.applicationID == applicationID) && $0.collection == collection }
                .sorted { $0.name < $1.name }
                .map { KeyringItemListing(item: $0, isLocked: false) }
        }
    }

    private func call<T>(
        _ kind: Call, collection: KeyringCollection, _ body: (inout State) -> T
    ) throws(SecureDictionaryError) -> T {
        let outcome: Result<T, SecureDictionaryError> = state.withLock { state in
            state.callCount += 1
            state.calls.append(kind)
            if let fault = state.faults.removeValue(forKey: state.callCount) {
                if fault.writesAnyway && kind == .store { _ = body(&state) }  // a write whose answer was lost
                return .failure(fault.error)
            }
            if state.lockedCollections.contains(collection) { return .failure(.locked) }
            return .success(body(&state))
        }
        if case .failure(.locked) = outcome, ErrorContext.current.provider == nil {
            // So that `locked` says to call setLocked(_:collection:), not to unlock a keyring; a
            // real provider that answered in this process keeps its name.
            ErrorContext.record(provider: Self.providerName)
        }
        return try outcome.get()
    }
}
