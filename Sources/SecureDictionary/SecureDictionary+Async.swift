import Dispatch
import ProcessSpawning

extension SecureDictionary {
    /// The async forms of every call that touches the keyring.
    ///
    /// ```swift
    /// let settings = try await SecureDictionary.Async.open(name: "settings")
    /// try await settings.async.setValue("s3cr3t", forKey: "apiToken")
    /// try await settings.async.update { entries in entries["n"] = 1 }
    /// ```
    ///
    /// The keyring call runs on a private dispatch queue, not Swift's cooperative pool, so
    /// awaiting it blocks nothing. Cancelling the task ends the wait at once with
    /// ``SecureDictionaryError/cancelled`` while the call finishes (or times out) on its queue,
    /// keeping cache and keyring equal: for a write, `cancelled` means "outcome unknown". They
    /// live in a namespace of their own: a sync and an async function of one name would make
    /// every sync call in async code a compile error.
    public struct Async: Sendable {
        /// The dictionary these calls act on.
        public let dictionary: SecureDictionary

        /// Opens (loads) a dictionary; see ``SecureDictionary/init(name:applicationID:options:)``.
        public static func open(
            name: String? = nil,
            applicationID: String = SecureDictionary.defaultApplicationID,
            options: Options = Options()
        ) async throws(SecureDictionaryError) -> SecureDictionary {
            try await Offload.run { () throws(SecureDictionaryError) in
                try SecureDictionary(name: name, applicationID: applicationID, options: options)
            }
        }

        /// See ``SecureDictionary/delete(name:applicationID:options:)``.
        public static func delete(
            name: String?,
            applicationID: String,
            options: Options = Options()
        ) async throws(SecureDictionaryError) -> Bool {
            try await Offload.run { () throws(SecureDictionaryError) in
                try SecureDictionary.delete(name: name, applicationID: applicationID, options: options)
            }
        }

        /// See ``SecureDictionary/names(applicationID:options:)``.
        public static func names(
            applicationID: String = SecureDictionary.defaultApplicationID,
            options: Options = Options()
        ) async throws(SecureDictionaryError) -> [String] {
            try await Offload.run { () throws(SecureDictionaryError) in
                try SecureDictionary.names(applicationID: applicationID, options: options)
            }
        }

        /// See ``SecureDictionary/items(applicationID:options:)``.
        public static func items(applicationID: String? = nil, options: Options = Options())
            async throws(SecureDictionaryError) -> [KeyringItemListing]
        {
            try await Offload.run { () throws(SecureDictionaryError) in
                try SecureDictionary.items(applicationID: applicationID, options: options)
            }
        }

        /// See ``SecureDictionary/value(forKey:)``.
        public func value(forKey key: String) async throws(SecureDictionaryError) -> Value? {
            try await Offload.run { () throws(SecureDictionaryError) in try dictionary.value(forKey: key) }
        }

        /// See ``SecureDictionary/value(for:)``.
        public func value<V>(for key: Key<V>) async throws(SecureDictionaryError) -> V {
            try await Offload.run { () throws(SecureDictionaryError) in try dictionary.value(for: key) }
        }

        /// See ``SecureDictionary/setValue(_:forKey:)-(SecureDictionary.Value?,_)``.
        public func setValue(_ value: Value?, forKey key: String) async throws(SecureDictionaryError) {
            try await Offload.run { () throws(SecureDictionaryError) in try dictionary.setValue(value, forKey: key) }
        }

        /// As ``SecureDictionary/setValue(_:forKey:)-(V?,_)``: `try await settings.async.setValue(Date(), forKey: "seen")`.
        public func setValue<V: PropertyListConvertible>(_ value: V?, forKey key: String) async throws(SecureDictionaryError) {
            try await Offload.run { () throws(SecureDictionaryError) in try dictionary.setValue(value, forKey: key) }
        }

        /// As ``SecureDictionary/value(forKey:as:)``: `try await settings.async.value(forKey: "seen", as: Date.self)`.
        public func value<V: PropertyListConvertible>(forKey key: String, as type: V.Type) async throws(SecureDictionaryError)
            -> V?
        {
            try await Offload.run { () throws(SecureDictionaryError) in try dictionary.value(forKey: key, as: type) }
        }

        /// See ``SecureDictionary/set(_:for:)``.
        public func set<V>(_ value: V, for key: Key<V>) async throws(SecureDictionaryError) {
            try await Offload.run { () throws(SecureDictionaryError) in try dictionary.set(value, for: key) }
        }

        /// See ``SecureDictionary/removeValue(forKey:)``.
        @discardableResult
        public func removeValue(forKey key: String) async throws(SecureDictionaryError) -> Value? {
            try await Offload.run { () throws(SecureDictionaryError) in try dictionary.removeValue(forKey: key) }
        }

        /// See ``SecureDictionary/removeAll()``.
        public func removeAll() async throws(SecureDictionaryError) {
            try await Offload.run { () throws(SecureDictionaryError) in try dictionary.removeAll() }
        }

        /// See ``SecureDictionary/delete()``.
        @discardableResult
        public func delete() async throws(SecureDictionaryError) -> Bool {
            try await Offload.run { () throws(SecureDictionaryError) in try dictionary.delete() }
        }

        /// See ``SecureDictionary/reload()``.
        public func reload() async throws(SecureDictionaryError) {
            try await Offload.run { () throws(SecureDictionaryError) in try dictionary.reload() }
        }

        /// See ``SecureDictionary/update(ifUnchanged:_:)``; `body` runs on the keyring queue.
        @discardableResult
        public func update(
            ifUnchanged expected: [String: Value?], _ body: @escaping @Sendable (inout Entries) throws -> Void
        ) async throws -> Bool {
            try await Offload.runRethrowing { try dictionary.update(ifUnchanged: expected, body) }
        }

        /// The async form of `update { }`; `body` runs on the keyring queue.
        @discardableResult
        public func update<R: Sendable>(_ body: @escaping @Sendable (inout Entries) throws -> R) async throws -> R {
            try await Offload.runRethrowing { try dictionary.update(body) }
        }
    }

    /// The async forms of this dictionary's keyring calls.
    public var async: Async { Async(dictionary: self) }
}

/// Runs blocking work on a private concurrent queue and awaits it, giving up at cancellation.
enum Offload {
    private static let queue = DispatchQueue(label: "SecureDictionary.async", attributes: .concurrent)

    /// Like ``run(_:)`` for work that may also throw a caller's own error (the body of
    /// `update`), which is rethrown as it is.
    static func runRethrowing<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await run { () throws(SecureDictionaryError) -> Result<T, any Error> in
            do { return .success(try work()) } catch let error as SecureDictionaryError {
                throw error
            } catch {
                return .failure(error)  // the body's own error
            }
        }.get()
    }

    static func run<T: Sendable>(
        _ work: @escaping @Sendable () throws(SecureDictionaryError) -> T
    ) async throws(SecureDictionaryError) -> T {
        let outcome = OneShot<Result<T, SecureDictionaryError>>()
        let result = await withTaskCancellationHandler {
            queue.async { outcome.finish(Result { () throws(SecureDictionaryError) in try work() }) }
            return await outcome.arrival()
        } onCancel: {
            outcome.finish(.failure(.cancelled))
        }
        return try result.get()
    }
}
