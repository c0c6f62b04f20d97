public import SecureDictionary

/// The failure of adoption itself, thrown as `SecureDictionaryError.store(_:)`; what the
/// keyring throws (`locked`, `timedOut`…) keeps its own case (<doc:AdoptionErrors>).
///
/// ```swift
/// do {
///     try SecureDictionary.adopt(.pythonKeyring(service: "my-app"), into: "tokens")
/// } catch SecureDictionaryError.store(let error as AdoptionError) {
///     print("Not adopted: \(error)")  // the options name a store that keeps no items
/// }
/// ```
public enum AdoptionError: KeyringStoreError {
    /// ``SecureDictionary/SecureDictionary/adopt(_:into:applicationID:options:conflicts:retire:dryRun:)``
    /// or ``SecureDictionary/SecureDictionary/exportItems(_:from:applicationID:options:)`` was
    /// given a store that keeps no per-key items of other libraries (those live in the
    /// keyring): pass `SecretServiceStore`, the default. Nothing was read or written.
    case storeHoldsNoItems(operation: String)

    /// What happened, then the one fix.
    public var description: String {
        switch self {
        case .storeHoldsNoItems(let operation):
            "\(operation) works on other libraries' keyring items, which this store does not keep: give it "
                + "SecretServiceStore (the default store)."
        }
    }
}

extension AdoptionError: NamedErrorCase {
    package var caseName: String {
        switch self {
        case .storeHoldsNoItems: "storeHoldsNoItems"
        }
    }
}

extension SecureDictionaryError {
    static func storeHoldsNoItems(operation: String) -> Self { .store(AdoptionError.storeHoldsNoItems(operation: operation)) }
}
