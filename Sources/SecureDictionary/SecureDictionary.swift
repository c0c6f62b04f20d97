import FoundationEssentials
import Logging

/// A dictionary that lives in the user's keyring.
///
/// ```swift
/// let settings = try SecureDictionary(name: "settings")
/// try settings.setValue("s3cr3t", forKey: "apiToken")     // one synchronous keyring write
/// let token = settings["apiToken"]?.stringValue            // from the cache, no D-Bus
/// try settings.update { entries in                         // many changes, one write
///     entries["refresh"] = "r-123"
///     entries["old"] = nil
/// }
/// ```
///
/// The whole dictionary is one binary property list in one Secret Service item named
/// `<applicationID>.__SecureDictionary__.<name>` (see ``KeyringItem``). It loads once on
/// init, serves reads from memory, and writes back synchronously on every mutation.
///
/// - **The read rule: an instance is always loaded, so its non-throwing reads answer from
///   memory and never load, wait or fail; to forget the secrets, release every instance.**
///   Init loads or throws, and nothing unloads it: `subscript`, ``keys``, ``count``,
///   ``snapshot``, iteration… give what was last loaded or written, on any thread. The last
///   instance of an item wipes its cache as it goes (<doc:SecretsInMemory>). The throwing
///   reads (``value(forKey:)``, ``entries()``…) load again first after a write of unknown outcome.
/// - Writes throw and are all-or-nothing: the cache changes only after the keyring accepted
///   the write.
/// - Thread-safe, and no change by another process or tool is lost: see
///   <doc:ThreadSafetyAndProcesses>.
/// - Values are value types: what you read cannot change under you without a write.
public final class SecureDictionary: Sendable {
    /// A value of the dictionary.
    public typealias Value = PropertyListValue

    /// The keyring item that holds this dictionary.
    public let item: KeyringItem
    /// The options this instance was opened with.
    public let options: Options

    let state: ItemState

    /// Opens (loads) the dictionary `name` of `applicationID`.
    ///
    /// ```swift
    /// let defaults = try SecureDictionary()                          // the unnamed one
    /// let tokens = try SecureDictionary(name: "tokens", applicationID: "com.example.app")
    /// ```
    ///
    /// - Parameters:
    ///   - name: The dictionary's name; `nil` for the application's default dictionary.
    ///     Non-empty, at most 255 UTF-8 bytes, no control characters.
    ///   - applicationID: Defaults to ``defaultApplicationID``.
    ///   - options: Collection, deadline, size cap, store and diagnostics; see ``Options``.
    /// - Throws: ``SecureDictionaryError/invalidName(reason:)`` before any D-Bus call; a load's
    ///   errors (``SecureDictionaryError/locked``, ``SecureDictionaryError/timedOut``,
    ///   ``SecureDictionaryError/corrupt(reason:)``…): it starts empty only when the unlocked
    ///   keyring positively has no such item.
    public init(
        name: String? = nil,
        applicationID: String = SecureDictionary.defaultApplicationID,
        options: Options = Options()
    ) throws(SecureDictionaryError) {
        let item = try KeyringItem(dictionaryName: name, applicationID: applicationID, collection: options.collection)
        self.item = item
        self.options = options
        state = ItemRegistry.state(for: item, store: options.store, logger: options.logger)
        try state.reload(options.context)
    }

    /// The application ID used when none is given: the main bundle's identifier when there
    /// is one, otherwise the executable's name. Give one explicitly when the executable may
    /// be renamed.
    public static var defaultApplicationID: String {
        if let identifier = MainBundle.identifier, !identifier.isEmpty { return identifier }
        let name = ProcessInfo.processInfo.processName
        return name.isEmpty ? "SecureDictionary" : name
    }

    // MARK: Reading

    /// The value for `key`, from memory (never a keyring call).
    ///
    /// Setting it writes at once (`nil` removes the key); a failed write goes to
    /// ``Options/failureHandler``. Prefer ``setValue(_:forKey:)-(SecureDictionary.Value?,_)``.
    public subscript(key: String) -> Value? {
        get {
            // The lookup and the decode side by side, not through `value(forKey:)`: the read
            // most code makes is then three calls deep, all of them in view here.
            let generation = state.loadedGeneration
            guard let entry = generation.entry(forKey: key) else { return nil }
            return generation.value(of: entry)
        }
        set {
            do throws(SecureDictionaryError) {
                try setValue(newValue, forKey: key)
            } catch {
                report(error, during: "subscript write")
            }
        }
    }

    /// The value for `key`, loading first when a write's outcome was unknown (a timeout, a
    /// lost connection), so that it is what the keyring holds.
    ///
    /// ```swift
    /// let token = try settings.value(forKey: "apiToken")   // a load, if needed, may throw (e.g. locked)
    /// ```
    ///
    /// - Throws: the load's error, when a load was needed and failed: never `nil` for "could
    ///   not tell".
    public func value(forKey key: String) throws(SecureDictionaryError) -> Value? {
        try state.generation(options.context).value(forKey: key)
    }

    /// Every entry, loading first when needed (as ``value(forKey:)``).
    ///
    /// ```swift
    /// let all = try settings.entries()      // [String: Value], what the keyring holds
    /// ```
    ///
    /// - Throws: the load's error, when a load was needed and failed.
    public func entries() throws(SecureDictionaryError) -> [String: Value] {
        try state.generation(options.context).dictionary()
    }

    /// All keys, in no particular order, from memory.
    public var keys: [String] { state.loadedGeneration.keys }

    /// The number of entries, from memory.
    public var count: Int { state.loadedGeneration.count }

    /// Whether there are no entries, from memory.
    public var isEmpty: Bool { state.loadedGeneration.count == 0 }

    /// A copy of every entry, made for you from memory: a `[String: Value]`, read with
    /// `snapshot["k"]?.stringValue` and the like. Of two canonically equivalent keys it holds
    /// one (<doc:SecretsInMemory#Keys-are-matched-by-their-Unicode-scalars>).
    public var snapshot: [String: Value] { state.loadedGeneration.dictionary() }

    // MARK: Writing

    /// Stores `value` under `key` (or removes the key when `value` is `nil`) with one keyring write.
    ///
    /// ```swift
    /// try settings.setValue(.string("s3cr3t"), forKey: "apiToken")
    /// ```
    ///
    /// - Throws: ``SecureDictionaryError/tooLarge(size:limit:)`` with nothing written when the
    ///   result would exceed ``Options/maximumSize``; ``SecureDictionaryError/locked``,
    ///   ``SecureDictionaryError/timedOut``… The cache changes only if the write succeeded.
    public func setValue(_ value: Value?, forKey key: String) throws(SecureDictionaryError) {
        try update { $0[key] = value }
    }

    /// Removes `key` with one keyring write and returns its old value.
    ///
    /// ```swift
    /// let old = try settings.removeValue(forKey: "apiToken")   // nil: there was none
    /// ```
    ///
    /// - Throws: as ``setValue(_:forKey:)-(SecureDictionary.Value?,_)``; the entry stays then.
    @discardableResult
    public func removeValue(forKey key: String) throws(SecureDictionaryError) -> Value? {
        try update { $0.removeValue(forKey: key) }
    }

    /// Removes every entry with one keyring write (the item stays, holding an empty dictionary;
    /// ``delete()`` removes the item).
    ///
    /// ```swift
    /// try settings.removeAll()
    /// ```
    ///
    /// - Throws: as ``setValue(_:forKey:)-(SecureDictionary.Value?,_)``; nothing changes then.
    public func removeAll() throws(SecureDictionaryError) {
        try update { $0.removeAll() }
    }

    /// Applies any number of changes with one keyring write: all of them or none.
    ///
    /// ```swift
    /// try tokens.update { entries in
    ///     entries["access"] = newAccess                               // plain values, or
    ///     entries["expires"] = .date(Date().addingTimeInterval(3600))  // Values; see Entries
    /// }
    /// ```
    ///
    /// `body` sees the current stored entries (re-read if another process wrote since). If
    /// `body` throws, nothing is written and its error is rethrown. `body` must not use this
    /// dictionary (or another instance of the same item): it runs under the item's lock.
    ///
    /// - Throws: what `body` throws, or a ``SecureDictionaryError``; only the latter, typed, when
    ///   `body` cannot throw (so `catch .locked` works).
    @discardableResult
    public func update<R>(_ body: (inout Entries) throws -> R) throws -> R {
        do {
            return try state.mutate(options.context) { (entries: inout Entries) throws -> R in try body(&entries) }
        } catch .store(let failure) {
            throw failure
        } catch .body(let failure) {
            throw failure
        }
    }

    /// `update { }` for a `body` that cannot throw: the same, with a typed error.
    ///
    /// ```swift
    /// try settings.update { entries in entries["launches"] = .integer(launches + 1) }   // `catch .locked` works
    /// ```
    ///
    /// - Throws: ``SecureDictionaryError``, as ``setValue(_:forKey:)-(SecureDictionary.Value?,_)``.
    @discardableResult
    public func update<R>(_ body: (inout Entries) -> R) throws(SecureDictionaryError) -> R {
        do {
            return try state.mutate(options.context, body)
        } catch {
            switch error {
            case .store(let failure): throw failure
            }
        }
    }

    /// Applies `body` with one keyring write only if the entries named in `expected` still
    /// hold exactly those values in the keyring (`nil`: no such entry); otherwise writes
    /// nothing and returns `false`. The optimistic form of `update { }`
    /// for work that must await between reading and writing, such as a token refresh:
    ///
    /// ```swift
    /// let refresh = try tokens.value(forKey: "refresh")              // read
    /// let pair = try await server.refresh(refresh)                   // await: no lock held
    /// let saved = try tokens.update(ifUnchanged: ["refresh": refresh]) { entries in
    ///     entries["access"] = .string(pair.access)
    ///     entries["refresh"] = .string(pair.refresh)
    /// }
    /// if !saved { /* another process refreshed first: use its tokens (now in the cache) */ }
    /// ```
    ///
    /// It compares under the item's locks with the stored item, whoever changed it, in place
    /// and as a change event tells values apart: strings by their Unicode scalars, reals and
    /// dates by their bits (a NaN matches itself), integer, real and bool apart. To keep two
    /// processes from spending one single-use token at all, claim it first with this call
    /// (the `token-cache` example).
    ///
    /// - Returns: `true` when `body` ran and its changes were written.
    /// - Throws: what `body` throws, or a ``SecureDictionaryError``.
    @discardableResult
    public func update(ifUnchanged expected: [String: Value?], _ body: (inout Entries) throws -> Void) throws -> Bool {
        struct Changed: Error {}
        do {
            try update { entries in
                for (key, value) in expected where !entries.holds(key, identicalTo: value) { throw Changed() }
                try body(&entries)
            }
            return true
        } catch is Changed {
            return false
        }
    }

    /// Loads the item again, replacing the cache (validated only when the stored item changed).
    ///
    /// ```swift
    /// try settings.reload()     // what another process wrote, without waiting for changes()
    /// ```
    ///
    /// - Throws: as ``init(name:applicationID:options:)``; the cache is unchanged then.
    public func reload() throws(SecureDictionaryError) {
        try state.reload(options.context)
    }

    /// The stored entries, loading them first when the cache is not known to be current: what
    /// `update { }` would start from, without the writer lock.
    package func currentEntries() throws(SecureDictionaryError) -> Entries {
        Entries(stored: try state.generation(options.context))
    }

    /// The entries in memory, never a load (the read rule): reads of one entry at a time out
    /// of the generation loaded now, which they keep alive (the configuration provider's
    /// snapshot). Making them copies no entry.
    package var loadedEntries: Entries { Entries(stored: state.loadedGeneration) }

    /// The stored entries, read from the store again (adoption's check of what it wrote).
    package func reloadedEntries() throws(SecureDictionaryError) -> Entries {
        Entries(stored: try state.reload(options.context))
    }

    /// Logs what a non-throwing call cannot throw and hands it to ``Options/failureHandler``. A
    /// typed read or update that found another type skips it, as documented: logged at `debug`
    /// (at `error`, swift-log's default handler printed it on standard error as a failure).
    func report(_ error: SecureDictionaryError, during operation: String, level: Logger.Level = .error) {
        options.logger.log(level: level, "\(operation) failed", metadata: ["item": "\(item.name)", "error": "\(error)"])
        options.failureHandler?(error)
    }
}

extension SecureDictionary: Sequence {
    /// Iterates over a snapshot of the entries.
    public func makeIterator() -> Dictionary<String, Value>.Iterator {
        snapshot.makeIterator()
    }
}

extension SecureDictionary: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The item name and the entry count: never keys or values.
    public var description: String { "SecureDictionary(\(item.name), \(state.loadedGeneration.count) entries)" }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["item": item.name, "count": state.loadedGeneration.count], displayStyle: .class)
    }
}
