extension SecureDictionary {
    /// The namespace for your typed keys: extend it with static constants.
    ///
    /// ```swift
    /// extension SecureDictionary.Keys {
    ///     static let apiToken = Key<String?>("apiToken")
    ///     static let retries = Key<Int>("retries", default: 3)
    /// }
    /// let retries = settings[.retries]               // 3 until set
    /// settings[.retries] = 5                         // one write; failures are reported
    /// try settings.set(5, for: .retries)             // the same, throwing
    /// ```
    public typealias Keys = AnyKey

    /// A typed key: its name in the dictionary, its value type and its default.
    ///
    /// Reading through the subscript never fails: a missing entry, or one of the wrong type
    /// (reported to ``Options/failureHandler``), reads as the default. ``value(for:)`` throws instead.
    public final class Key<Value: PropertyListConvertible>: AnyKey, @unchecked Sendable {
        // @unchecked: immutable after init (only `let`s), and Value is Sendable.
        /// The value read when the entry is missing or unreadable.
        public let defaultValue: Value

        /// A key whose missing entry reads as `defaultValue`.
        public init(_ name: String, default defaultValue: Value) {
            self.defaultValue = defaultValue
            super.init(name: name)
        }
    }

    /// The base of every ``Key``; extend it (as ``Keys``) to declare keys.
    public class AnyKey: @unchecked Sendable, CustomStringConvertible, CustomReflectable {
        // @unchecked: a non-final class cannot be checked, but it holds only a `let` String.
        /// The entry's key in the dictionary.
        public let name: String

        init(name: String) { self.name = name }

        /// Lets `Key<Int>(…)` be written without the `SecureDictionary.` prefix inside
        /// `extension SecureDictionary.Keys { … }`.
        public typealias Key<Value: PropertyListConvertible> = SecureDictionary.Key<Value>

        /// The value type only: key names may be secret too.
        public var description: String { "Key(redacted)" }
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
    }
}

extension SecureDictionary.Key where Value: ExpressibleByNilLiteral {
    /// A key of optional type: a missing entry reads as `nil`.
    public convenience init(_ name: String) {
        self.init(name, default: nil)
    }
}

extension SecureDictionary {
    /// The value for `key` from the loaded cache, or its default when the entry is missing or
    /// of another type; setting it writes at once (`nil` removes an optional key's entry).
    /// Failures go to ``Options/failureHandler``; use ``set(_:for:)`` where you can handle them.
    ///
    /// - Precondition: the dictionary is loaded (the read rule).
    public subscript<Value>(key: Key<Value>) -> Value {
        get { self[key.name] ?? key.defaultValue }  // the plain-value subscript, which reports another type
        set {
            do throws(SecureDictionaryError) {
                try set(newValue, for: key)
            } catch {
                report(error, during: "typed subscript write")
            }
        }
    }

    /// The value for `key` (its default when missing), loading first when needed (as
    /// ``value(forKey:)``).
    ///
    /// ```swift
    /// let retries = try settings.value(for: .retries)     // Key<Int>: its default when missing
    /// ```
    ///
    /// - Throws: ``SecureDictionaryError/typeMismatch(expected:found:)`` when the stored
    ///   value is of another type; as ``value(forKey:)``.
    public func value<Value>(for key: Key<Value>) throws(SecureDictionaryError) -> Value {
        try value(forKey: key.name, as: Value.self) ?? key.defaultValue
    }

    /// Stores `value` for `key` with one keyring write; `nil` (for an optional key) removes it.
    ///
    /// ```swift
    /// try settings.set(retries + 1, for: .retries)
    /// ```
    ///
    /// - Throws: as ``setValue(_:forKey:)-(V?,_)``.
    public func set<Value>(_ value: Value, for key: Key<Value>) throws(SecureDictionaryError) {
        try setValue(try Self.storedForm(of: value), forKey: key.name)
    }

    /// Removes the entry for `key` with one keyring write.
    ///
    /// ```swift
    /// try settings.remove(.retries)     // reads give the key's default again
    /// ```
    ///
    /// - Throws: as ``setValue(_:forKey:)-(SecureDictionary.Value?,_)``.
    public func remove<Value>(_ key: Key<Value>) throws(SecureDictionaryError) {
        try setValue(nil, forKey: key.name)
    }
}

extension Dictionary where Key == String, Value == PropertyListValue {
    /// Typed access to a `[String: Value]`, such as a ``SecureDictionary/snapshot``:
    ///
    /// ```swift
    /// var entries = settings.snapshot
    /// try entries.set(newToken, for: .apiToken)
    /// let retries = entries[.retries]
    /// ```
    ///
    /// Reads the entry for `key`, or its default when it is missing or of another type.
    public subscript<V>(key: SecureDictionary.Key<V>) -> V {
        self[key.name].flatMap { try? V(propertyListValue: $0) } ?? key.defaultValue
    }

    /// Sets the entry for `key`; `nil` (for an optional key) removes it.
    ///
    /// - Throws: as ``SecureDictionary/Entries/set(_:forKey:)``.
    public mutating func set<V>(_ value: V, for key: SecureDictionary.Key<V>) throws(SecureDictionaryError) {
        self[key.name] = try SecureDictionary.storedForm(of: value)
    }
}
