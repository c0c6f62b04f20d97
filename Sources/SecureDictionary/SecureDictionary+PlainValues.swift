import Logging

/// Plain Swift values (every ``PropertyListConvertible`` type) under string keys.
extension SecureDictionary {
    /// Stores `value` under `key` with one keyring write; `nil` removes the key.
    ///
    /// ```swift
    /// let token: String = try await signIn()
    /// try settings.setValue(token, forKey: "apiToken")
    /// try settings.setValue(Profile(name: "Ada"), forKey: "profile")   // a Codable type
    /// ```
    ///
    /// - Throws: ``SecureDictionaryError/invalidValue(reason:)`` when a `Codable` value cannot
    ///   be encoded, and what ``setValue(_:forKey:)-(SecureDictionary.Value?,_)`` throws.
    public func setValue<V: PropertyListConvertible>(_ value: V?, forKey key: String) throws(SecureDictionaryError) {
        try setValue(try Self.storedForm(of: value), forKey: key)
    }

    /// The value for `key` as a `V`, loading first when needed (as ``value(forKey:)``).
    ///
    /// ```swift
    /// let retries = try settings.value(forKey: "retries", as: Int.self) ?? 3
    /// ```
    ///
    /// - Returns: `nil` when there is no such entry.
    /// - Throws: ``SecureDictionaryError/typeMismatch(expected:found:)`` when the entry holds
    ///   another type; as ``value(forKey:)``.
    public func value<V: PropertyListConvertible>(forKey key: String, as type: V.Type) throws(SecureDictionaryError) -> V? {
        try currentEntries().value(forKey: key, as: type)
    }

    /// The value for `key` as a `V`, from the loaded cache; setting it writes at once.
    ///
    /// ```swift
    /// settings["apiToken"] = token                    // token: String
    /// let token: String? = settings["apiToken"]
    /// ```
    ///
    /// Reading gives `nil` for a missing entry, and for an entry of another type. Failures go
    /// to ``Options/failureHandler``; ``value(forKey:as:)`` and ``setValue(_:forKey:)-(V?,_)`` throw.
    public subscript<V: PropertyListConvertible>(key: String) -> V? {
        get {
            guard let stored = state.loadedGeneration.value(forKey: key) else { return nil }
            do throws(SecureDictionaryError) {
                return try V(propertyListValue: stored)
            } catch {
                report(error, during: "typed read", level: .debug)
                return nil
            }
        }
        set {
            do throws(SecureDictionaryError) {
                try setValue(newValue, forKey: key)
            } catch {
                report(error, during: "subscript write")
            }
        }
    }

    /// `value`'s stored form; `nil` (also a wrapped `Optional.none`) means "no entry".
    static func storedForm<V: PropertyListConvertible>(of value: V?) throws(SecureDictionaryError) -> Value? {
        guard let value else { return nil }
        if let optional = value as? any OptionalProtocol, optional.isNone { return nil }
        return try value.propertyListValue()
    }
}
