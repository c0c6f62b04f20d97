extension SecureDictionary {
    /// The entries as `update { entries in … }` lets you change them: a
    /// dictionary of ``Value``s that also takes plain Swift values and typed keys.
    ///
    /// ```swift
    /// try tokens.update { entries in
    ///     entries["access"] = newAccess                 // a String variable
    ///     entries["expires"] = .date(expiry)            // or a Value
    ///     entries[.retries] = entries[.retries] + 1      // a typed key
    ///     entries["old"] = nil
    /// }
    /// ```
    ///
    /// Reading a plain value gives `nil` for a missing entry and for one of another type (use
    /// ``value(forKey:as:)`` to tell them apart); a typed key gives its default then. Setting a
    /// value whose stored form cannot be made (a `Codable` type that fails to encode) stops the
    /// program: use the throwing ``set(_:forKey:)`` for such types. `dictionary` is the plain
    /// `[String: Value]` underneath.
    public struct Entries: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
        /// Every entry.
        public var dictionary: [String: Value]

        public init(_ dictionary: [String: Value] = [:]) { self.dictionary = dictionary }

        public init(dictionaryLiteral elements: (String, Value)...) {
            dictionary = Dictionary(elements, uniquingKeysWith: { _, last in last })
        }

        public subscript(key: String) -> Value? {
            get { dictionary[key] }
            set { dictionary[key] = newValue }
        }

        public subscript<V: PropertyListConvertible>(key: String) -> V? {
            get { dictionary[key].flatMap { try? V(propertyListValue: $0) } }
            set {
                do throws(SecureDictionaryError) {
                    dictionary[key] = try SecureDictionary.storedForm(of: newValue)
                } catch {
                    preconditionFailure("SecureDictionary: a value cannot be stored (\(error)); use try entries.set(_:forKey:)")
                }
            }
        }

        /// The entry for `key`, or its default when it is missing or of another type; setting
        /// it to `nil` (for an optional key) removes the entry.
        public subscript<V>(key: Key<V>) -> V {
            get { dictionary[key] }
            set {
                do throws(SecureDictionaryError) {
                    try dictionary.set(newValue, for: key)
                } catch {
                    preconditionFailure("SecureDictionary: a value cannot be stored (\(error)); use try entries.set(_:for:)")
                }
            }
        }

        /// Sets the entry for `key` to `value`'s stored form; `nil` removes it.
        ///
        /// - Throws: ``SecureDictionaryError/invalidValue(reason:)`` when a `Codable` value
        ///   cannot be encoded.
        public mutating func set<V: PropertyListConvertible>(_ value: V?, forKey key: String) throws(SecureDictionaryError) {
            dictionary[key] = try SecureDictionary.storedForm(of: value)
        }

        /// Sets the entry for a typed key; `nil` (for an optional key) removes it.
        ///
        /// - Throws: ``SecureDictionaryError/invalidValue(reason:)`` when a `Codable` value
        ///   cannot be encoded.
        public mutating func set<V>(_ value: V, for key: Key<V>) throws(SecureDictionaryError) {
            try dictionary.set(value, for: key)
        }

        /// The entry for `key` as a `V`; `nil` when there is none.
        ///
        /// - Throws: ``SecureDictionaryError/typeMismatch(expected:found:)`` when it holds another type.
        public func value<V: PropertyListConvertible>(forKey key: String, as type: V.Type) throws(SecureDictionaryError) -> V? {
            guard let stored = dictionary[key] else { return nil }
            return try V(propertyListValue: stored)
        }

        @discardableResult
        public mutating func removeValue(forKey key: String) -> Value? { dictionary.removeValue(forKey: key) }

        public mutating func removeAll() { dictionary.removeAll() }

        public var keys: Dictionary<String, Value>.Keys { dictionary.keys }
        public var count: Int { dictionary.count }
        public var isEmpty: Bool { dictionary.isEmpty }

        public func makeIterator() -> Dictionary<String, Value>.Iterator { dictionary.makeIterator() }

        /// Runs `body` on `dictionary` as entries. The storage moves in and back out (also when
        /// `body` throws), so no copy is made.
        static func editing<R, E: Error>(_ dictionary: inout [String: Value], _ body: (inout Entries) throws(E) -> R) throws(E)
            -> R
        {
            var entries = Entries(dictionary)
            dictionary = [:]
            defer { dictionary = entries.dictionary }
            return try body(&entries)
        }
    }
}

extension SecureDictionary.Entries: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The entry count only: keys and values may be secrets.
    public var description: String { "Entries(\(count) entries)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": count], displayStyle: .struct) }
}
