/// A property backed by one typed key of a ``SecureDictionary``.
///
/// ```swift
/// let settings = try SecureDictionary(name: "settings")
/// @SecureStored(.retries, in: settings) var retries      // Int, 3 until set
/// retries += 1                                            // one keyring write
/// try $retries.set(10)                                    // the same, but throwing
/// ```
///
/// Reads and writes as the typed subscript ``SecureDictionary/subscript(_:)-(SecureDictionary.Key<Value>)``,
/// whose failures go to ``SecureDictionary/Options/failureHandler``; the projected value's
/// `get()` and `set(_:)` throw instead.
@propertyWrapper
public struct SecureStored<Value: PropertyListConvertible>: Sendable {
    /// The typed key the property reads and writes.
    public let key: SecureDictionary.Key<Value>
    /// The dictionary the entry lives in.
    public let dictionary: SecureDictionary

    /// A property for `key` of `dictionary`: `@SecureStored(.retries, in: settings) var retries`.
    public init(_ key: SecureDictionary.Key<Value>, in dictionary: SecureDictionary) {
        self.key = key
        self.dictionary = dictionary
    }

    /// The entry's value (the key's default when missing); setting it writes at once.
    public var wrappedValue: Value {
        get { dictionary[key] }
        nonmutating set {
            do throws(SecureDictionaryError) {
                try dictionary.set(newValue, for: key)
            } catch {
                dictionary.report(error, during: "property write")
            }
        }
    }

    /// The throwing forms: `try $property.get()`, `try $property.set(value)`.
    public var projectedValue: SecureStored<Value> { self }

    /// The value, loading first when needed; errors thrown instead of the default.
    ///
    /// ```swift
    /// let current = try $retries.get()
    /// ```
    ///
    /// - Throws: as ``SecureDictionary/value(for:)``.
    public func get() throws(SecureDictionaryError) -> Value {
        try dictionary.value(for: key)
    }

    /// Stores `value` with one keyring write; errors thrown instead of reported.
    ///
    /// ```swift
    /// try $retries.set(10)
    /// ```
    ///
    /// - Throws: as ``SecureDictionary/set(_:for:)``.
    public func set(_ value: Value) throws(SecureDictionaryError) {
        try dictionary.set(value, for: key)
    }
}
