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
    /// Setting through a subscript a value whose stored form cannot be made (a `Codable` type
    /// that fails to encode) stops the program: use the throwing ``set(_:forKey:)`` for such types.
    ///
    /// Inside `update { }` the stored entries stay in the library's wiped memory: what you
    /// read is a copy made for you, what you set is kept apart until it is written. Keys match
    /// by their Unicode scalars (<doc:SecretsInMemory#Keys-are-matched-by-their-Unicode-scalars>).
    public struct Entries: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
        /// The stored generation these entries start from; `nil` for entries you made.
        let stored: Generation?
        /// The changes made to it.
        private(set) var overlay = Overlay()

        init(stored: Generation) { self.stored = stored }

        /// Entries holding `dictionary`, for comparing with what `update { }` sees:
        /// `#expect(entries == Entries(["k": "v"]))`.
        public init(_ dictionary: [String: Value] = [:]) {
            stored = nil
            for (key, value) in dictionary { overlay.set(key, to: value) }
        }

        /// Entries holding `elements`: `let expected: SecureDictionary.Entries = ["k": "v"]`.
        public init(dictionaryLiteral elements: (String, Value)...) {
            stored = nil
            for (key, value) in elements { overlay.set(key, to: value) }
        }

        /// Every entry, as a `[String: Value]` made for you (of canonically equivalent keys, one,
        /// as in ``SecureDictionary/snapshot``); setting it replaces every entry.
        public var dictionary: [String: Value] {
            get {
                var entries = storedEntries?.dictionary() ?? [:]
                for (key, edit) in overlay.edits { entries[key.text] = edit.value }
                return entries
            }
            set {
                overlay.removeAll()
                for (key, value) in newValue { overlay.set(key, to: value) }
            }
        }

        /// The entry for `key` as a ``Value`` (`nil` when missing); setting `nil` removes it.
        public subscript(key: String) -> Value? {
            get {
                if let edit = overlay.edit(of: key) { return edit.value }
                return storedEntries?.value(forKey: key)
            }
            set { overlay.set(key, to: newValue) }
        }

        /// The entry for `key` as a plain Swift value (`nil` when missing or of another type:
        /// ``value(forKey:as:)`` tells them apart): `let token: String? = entries["token"]`.
        public subscript<V: PropertyListConvertible>(key: String) -> V? {
            get { self[key].flatMap { try? V(propertyListValue: $0) } }
            set {
                do throws(SecureDictionaryError) {
                    self[key] = try SecureDictionary.storedForm(of: newValue)
                } catch {
                    preconditionFailure("SecureDictionary: a value cannot be stored (\(error)); use try entries.set(_:forKey:)")
                }
            }
        }

        /// The entry for `key`, or its default when it is missing or of another type; setting
        /// it to `nil` (for an optional key) removes the entry.
        public subscript<V>(key: SecureDictionary.Key<V>) -> V {
            get { self[key.name] ?? key.defaultValue }
            set {
                do throws(SecureDictionaryError) {
                    try set(newValue, for: key)
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
            self[key] = try SecureDictionary.storedForm(of: value)
        }

        /// Sets the entry for a typed key; `nil` (for an optional key) removes it.
        ///
        /// - Throws: as ``set(_:forKey:)``.
        public mutating func set<V>(_ value: V, for key: SecureDictionary.Key<V>) throws(SecureDictionaryError) {
            self[key.name] = try SecureDictionary.storedForm(of: value)
        }

        /// The entry for `key` as a `V`; `nil` when there is none.
        ///
        /// ```swift
        /// try settings.update { entries in
        ///     let seen = try entries.value(forKey: "seen", as: Date.self)
        /// }
        /// ```
        ///
        /// - Throws: ``SecureDictionaryError/typeMismatch(expected:found:)`` when it holds another type.
        public func value<V: PropertyListConvertible>(forKey key: String, as type: V.Type) throws(SecureDictionaryError) -> V? {
            guard let stored = self[key] else { return nil }
            return try V(propertyListValue: stored)
        }

        /// Removes the entry for `key`; returns its value (`nil` when there was none).
        @discardableResult
        public mutating func removeValue(forKey key: String) -> Value? {
            defer { self[key] = nil }
            return self[key]
        }

        /// Removes every entry (the write keeps the item, holding an empty dictionary).
        public mutating func removeAll() { overlay.removeAll() }

        /// The keys, in no particular order.
        public var keys: [String] {
            var keys = storedEntries?.keys.filter { overlay.edit(of: $0) == nil } ?? []
            for (key, edit) in overlay.edits where edit.value != nil { keys.append(key.text) }
            return keys
        }

        /// How many entries there are.
        public var count: Int {
            var count = storedEntries?.count ?? 0
            for (key, edit) in overlay.edits {
                switch (storedEntries?.contains(key.text) ?? false, edit) {
                case (true, .removed): count -= 1
                case (false, .value): count += 1
                default: break
                }
            }
            return count
        }

        /// Whether there is no entry.
        public var isEmpty: Bool { count == 0 }

        /// The entries, over a copy made for you (``dictionary``).
        public func makeIterator() -> Dictionary<String, Value>.Iterator { dictionary.makeIterator() }

        /// Whether both hold the same entries.
        public static func == (left: Entries, right: Entries) -> Bool { left.dictionary == right.dictionary }

        public func hash(into hasher: inout Hasher) { hasher.combine(dictionary) }

        /// Whether `key` holds a value stored identically to `value` (`nil`: no such entry),
        /// compared where the value is: in the overlay, or in place in the stored generation.
        package func holds(_ key: String, identicalTo value: Value?) -> Bool {
            if let edit = overlay.edit(of: key) {
                guard let mine = edit.value, let value else { return edit.value == nil && value == nil }
                return mine.isStoredIdentically(to: value)
            }
            guard let storedEntries else { return value == nil }
            return storedEntries.holds(key, identicalTo: value)
        }

        /// The stored generation, unless the changes dropped its entries.
        private var storedEntries: Generation? { overlay.dropsStored ? nil : stored }
    }
}

extension SecureDictionary.Entries: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The entry count only: keys and values may be secrets.
    public var description: String { "Entries(\(count) entries)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["count": count], displayStyle: .struct) }
}
