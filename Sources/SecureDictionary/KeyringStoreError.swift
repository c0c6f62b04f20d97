/// The failures of a store that are the store's own: a store outside this module (the
/// encrypted-file stores of `SecureDictionaryFileStore`, or yours) throws them wrapped in
/// ``SecureDictionaryError/store(_:)``, so that every call still throws one type.
///
/// ```swift
/// let store = EncryptedFileStore(keySource: .passphrase(.terminal()))   // of SecureDictionaryFileStore
/// do {
///     let tokens = try SecureDictionary(name: "tokens", options: .init(store: store))
/// } catch SecureDictionaryError.store(FileStoreError.wrongPassphrase) {   // one case, by its value
///     print("Wrong passphrase: try again.")
/// } catch SecureDictionaryError.store(let error as FileStoreError) {      // the store's whole error type
///     print("The encrypted files cannot be used: \(error)")
/// }
/// ```
///
/// A store of your own defines its errors the same way: an `enum` conforming to this
/// protocol, thrown as `SecureDictionaryError.store(MyStoreError.someCase)`. Its
/// `description` says what happened and the one fix, and, like every error of this library,
/// never holds a key, a value or secret bytes.
public protocol KeyringStoreError: Error, Sendable, Equatable, CustomStringConvertible {}

/// Matches a store's error against one of its values, as in
/// `catch SecureDictionaryError.store(FileStoreError.wrongPassphrase)`.
public func ~= <Failure: KeyringStoreError>(pattern: Failure, value: any KeyringStoreError) -> Bool {
    (value as? Failure) == pattern
}

extension KeyringStoreError {
    /// Whether `other` is this error: of the same type and equal.
    func isEqual(to other: any KeyringStoreError) -> Bool { (other as? Self) == self }
}

/// A store error that names its case, for the tests' and the reliability suite's reports
/// (`caseName(_:)` of the test support), which never print a payload.
package protocol NamedErrorCase {
    /// The case's name alone, e.g. `wrongPassphrase`.
    var caseName: String { get }
}
