import CLibSecret
import CSecretShim

// With the rest of Internal/LibSecret/, the only code of the library that touches libsecret
// and GLib. One internal function per kind of call; `KeyringErrorMapping` turns a GError into
// a SecureDictionaryError. Every call runs on a `DeadlineLane`, so none can outlive its deadline.

/// The libsecret calls SecureDictionary makes, each against the collection behind an alias.
struct LibSecretClient: Sendable {
    let lane = DeadlineLane(label: "SecureDictionary.keyring") { LibSecretConnection() }

    /// Runs `operation` on the lane with a deadline, reconnecting once when the connection
    /// turns out to be dead (the daemon restarted).
    func perform<T: Sendable>(
        timeout: Duration,
        _ operation: @escaping @Sendable (Call) throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        let cancellable = Cancellable()
        let result = lane.run(timeout: timeout, interrupt: { cancellable.cancel() }) { connection in
            var attempt = 0
            var outcomeUnknown = false
            while true {
                attempt += 1
                do throws(SecureDictionaryError) {
                    let service = try connection.openService(cancellable)
                    let call = Call(connection: connection, service: service, cancellable: cancellable)
                    return Result<T, SecureDictionaryError>.success(try operation(call))
                } catch {
                    if error.keepsConnection == false { connection.close() }
                    outcomeUnknown = outcomeUnknown || error.leavesWriteOutcomeUnknown
                    if error.deservesFreshConnection && attempt == 1 { continue }
                    // A write whose first attempt died with the connection may have landed,
                    // whatever the retry says: keep the outcome "unknown".
                    if outcomeUnknown && !error.leavesWriteOutcomeUnknown { return .failure(.connectionLost) }
                    return .failure(error)
                }
            }
        }
        guard let result else { throw .timedOut }
        return try result.get()
    }

    // MARK: Operations

    func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes? {
        try perform(timeout: timeout) { call throws(SecureDictionaryError) in
            try Self.matchingPaths(call, item) { paths, collection throws(SecureDictionaryError) in
                if paths.count > 1 { throw .ambiguous(count: paths.count) }
                guard let path = paths.first else { return nil }
                return try Self.secret(call.service, path: path, collection: collection, call.cancellable)
            }
        }
    }

    func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        try perform(timeout: timeout) { call throws(SecureDictionaryError) in
            let collection = try Self.collectionPath(call, item.collection)
            try Self.unlockingWithoutPrompt(call, collection) { () throws(SecureDictionaryError) in
                try Self.createOrReplace(call.service, collection: collection, item: item, secret: secret, call.cancellable)
            }
        }
    }

    func delete(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> Bool {
        try perform(timeout: timeout) { call throws(SecureDictionaryError) in
            try Self.matchingPaths(call, item) { paths, _ throws(SecureDictionaryError) in
                for path in paths {
                    var error: UnsafeMutablePointer<GError>?
                    if secret_service_delete_item_dbus_path_sync(call.service, path, call.cancellable.pointer, &error) == 0 {
                        throw KeyringErrorMapping.map(error)
                    }
                }
                return !paths.isEmpty
            }
        }
    }

    /// Runs `body` with the paths of the unlocked items matching `item` in its collection
    /// (unlocked first where no prompt is needed) and that collection's path.
    ///
    /// - Throws: ``SecureDictionaryError/locked`` when a matching item is locked, or when none
    ///   matches and the collection is locked: only an unlocked collection can say "no such
    ///   item".
    private static func matchingPaths<T>(
        _ call: Call, _ item: KeyringItem,
        _ body: (_ paths: [String], _ collection: String) throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        let (service, cancellable) = (call.service, call.cancellable)
        let collection = try collectionPath(call, item.collection)
        return try unlockingWithoutPrompt(call, collection) { () throws(SecureDictionaryError) in
            let found = try search(service, attributes: item.attributes, in: collection, cancellable)
            if !found.locked.isEmpty { throw .locked }
            if found.unlocked.isEmpty, try isLocked(service, collection: collection, cancellable) { throw .locked }
            return try body(found.unlocked, collection)
        }
    }

    func listItems(applicationID: String?, collection alias: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [KeyringItemListing]
    {
        try perform(timeout: timeout) { call throws(SecureDictionaryError) in
            let (service, cancellable) = (call.service, call.cancellable)
            let collection = try Self.collectionPath(call, alias)
            var attributes = ["xdg:schema": KeyringItem.schemaName]
            attributes["application"] = applicationID
            let found = try Self.search(service, attributes: attributes, in: collection, cancellable)
            if found.unlocked.isEmpty, found.locked.isEmpty,
                try Self.isLocked(service, collection: collection, cancellable)
            {
                throw .locked
            }
            var listings: [KeyringItemListing] = []
            for (paths, isLocked) in [(found.unlocked, false), (found.locked, true)] {
                for path in paths {
                    let stored = try Self.attributes(service, path: path, cancellable)
                    if let listing = KeyringItemListing(attributes: stored, collection: alias, isLocked: isLocked) {
                        listings.append(listing)
                    }
                }
            }
            return listings.sorted { $0.item.name < $1.item.name }
        }
    }

    /// Runs `body`; if it finds the collection locked, asks the service to unlock it through
    /// the no-prompt connection and runs `body` once more. That unlocks only collections that
    /// need no prompt (gnome-keyring reloads password-less ones locked after a restart);
    /// anything that would prompt fails at once, and `body`'s `locked` stands.
    private static func unlockingWithoutPrompt<T>(
        _ call: Call, _ collection: String, _ body: () throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        do {
            return try body()
        } catch .locked {
            guard try unlockWithoutPrompt(call, collection: collection) else { throw .locked }
            return try body()
        }
    }

    // MARK: One function per libsecret call

    /// `secret_service_unlock_dbus_paths_sync` on the no-prompt service: whether the
    /// collection is unlocked now (`false` when unlocking would need a prompt).
    private static func unlockWithoutPrompt(_ call: Call, collection: String) throws(SecureDictionaryError) -> Bool {
        var error: UnsafeMutablePointer<GError>?
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        let count = collection.withCString { path in
            var paths: [UnsafePointer<gchar>?] = [path, nil]
            return paths.withUnsafeMutableBufferPointer { buffer in
                secret_service_unlock_dbus_paths_sync(
                    call.service, buffer.baseAddress, call.cancellable.pointer, &unlocked, &error)
            }
        }
        g_strfreev(unlocked)
        if count < 0 {
            let mapped = KeyringErrorMapping.map(error)
            if mapped == .locked { return false }  // a prompt would have been needed
            throw mapped
        }
        return count > 0
    }

    /// `secret_service_read_alias_dbus_path_sync`: the object path of the aliased collection
    /// (cached by the connection for a moment).
    private static func collectionPath(_ call: Call, _ collection: KeyringCollection) throws(SecureDictionaryError) -> String {
        if let cached = call.connection.cachedPath(of: collection.alias) { return cached }
        var error: UnsafeMutablePointer<GError>?
        guard
            let path = secret_service_read_alias_dbus_path_sync(
                call.service, collection.alias, call.cancellable.pointer, &error
            )
        else {
            if error != nil { throw KeyringErrorMapping.map(error) }
            throw .noSuchCollection(alias: collection.alias)  // ReadAlias answered "/"
        }
        defer { g_free(path) }
        let resolved = String(cString: path)
        call.connection.remember(resolved, for: collection.alias)
        return resolved
    }

    /// `secret_service_search_for_dbus_paths_sync`, narrowed to the items of one collection.
    private static func search(
        _ service: UnsafeMutablePointer<SecretService>, attributes: [String: String], in collection: String,
        _ cancellable: Cancellable
    ) throws(SecureDictionaryError) -> (unlocked: [String], locked: [String]) {
        let table = sd_attributes_new(
            attributes["service"], attributes["application"],
            attributes["dictionary"], attributes["xdg:schema"])
        defer { g_hash_table_unref(table) }
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var error: UnsafeMutablePointer<GError>?
        defer {
            g_strfreev(unlocked)
            g_strfreev(locked)
        }
        if secret_service_search_for_dbus_paths_sync(service, nil, table, cancellable.pointer, &unlocked, &locked, &error) == 0 {
            throw KeyringErrorMapping.map(error)
        }
        let prefix = collection + "/"
        return (strings(unlocked).filter { $0.hasPrefix(prefix) }, strings(locked).filter { $0.hasPrefix(prefix) })
    }

    /// The `Locked` property of a collection (`org.freedesktop.DBus.Properties.Get`).
    private static func isLocked(
        _ service: UnsafeMutablePointer<SecretService>, collection: String, _ cancellable: Cancellable
    ) throws(SecureDictionaryError) -> Bool {
        var error: UnsafeMutablePointer<GError>?
        let answer = sd_collection_is_locked(service, collection, cancellable.pointer, &error)
        if answer < 0 { throw KeyringErrorMapping.map(error) }
        return answer != 0
    }

    /// `secret_service_get_secret_for_dbus_path_sync`: a copy of the item's secret bytes.
    private static func secret(
        _ service: UnsafeMutablePointer<SecretService>, path: String, collection: String, _ cancellable: Cancellable
    ) throws(SecureDictionaryError) -> SecretBytes {
        var error: UnsafeMutablePointer<GError>?
        guard let value = secret_service_get_secret_for_dbus_path_sync(service, path, cancellable.pointer, &error) else {
            if error != nil { throw KeyringErrorMapping.map(error) }
            // No secret and no error: the item was locked (or removed) since the search.
            if try isLocked(service, collection: collection, cancellable) { throw .locked }
            throw .connectionLost
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var length = 0
        guard let bytes = sd_value_bytes(value, &length), length > 0 else {
            return SecretBytes(copying: UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return SecretBytes(copying: UnsafeRawBufferPointer(start: bytes, count: length))
    }

    /// `secret_service_create_item_dbus_path_sync` with `SECRET_ITEM_CREATE_REPLACE`.
    private static func createOrReplace(
        _ service: UnsafeMutablePointer<SecretService>, collection: String, item: KeyringItem, secret: SecretBytes,
        _ cancellable: Cancellable
    ) throws(SecureDictionaryError) {
        let table = sd_attributes_new(item.name, item.applicationID, item.dictionaryName, KeyringItem.schemaName)
        let properties = sd_item_properties_new(item.name, table)
        g_hash_table_unref(table)
        defer { g_hash_table_unref(properties) }
        // The value borrows `secret`'s bytes (no copy): they outlive it, since libsecret
        // encrypts them during the call and the value is released before `secret` is.
        try secret.withUnsafeBytes { bytes throws(SecureDictionaryError) in
            let value = sd_value_new_borrowing(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            var error: UnsafeMutablePointer<GError>?
            guard
                let path = secret_service_create_item_dbus_path_sync(
                    service, collection, properties, value, SECRET_ITEM_CREATE_REPLACE, cancellable.pointer, &error
                )
            else {
                throw KeyringErrorMapping.map(error)
            }
            g_free(path)
        }
    }

    /// The item's `Attributes` property.
    private static func attributes(
        _ service: UnsafeMutablePointer<SecretService>, path: String, _ cancellable: Cancellable
    ) throws(SecureDictionaryError) -> [String: String] {
        var error: UnsafeMutablePointer<GError>?
        guard let table = sd_item_attributes(service, path, cancellable.pointer, &error) else {
            throw KeyringErrorMapping.map(error)
        }
        defer { g_hash_table_unref(table) }
        var result: [String: String] = [:]
        var iterator = GHashTableIter()
        g_hash_table_iter_init(&iterator, table)
        var key: gpointer?
        var value: gpointer?
        while g_hash_table_iter_next(&iterator, &key, &value) != 0 {
            if let key, let value {
                result[String(cString: key.assumingMemoryBound(to: CChar.self))] =
                    String(cString: value.assumingMemoryBound(to: CChar.self))
            }
        }
        return result
    }

    private static func strings(_ list: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
        guard let list else { return [] }
        var result: [String] = []
        var index = 0
        while let element = list[index] {
            result.append(String(cString: element))
            index += 1
        }
        return result
    }
}

extension SecureDictionaryError {
    /// Whether one retry on a new connection may succeed: the connection died, or the service
    /// answered with a D-Bus error libsecret did not name (e.g. a session the restarted
    /// daemon no longer knows). Every operation is idempotent, so retrying once is safe.
    fileprivate var deservesFreshConnection: Bool {
        switch self {
        case .connectionLost: true
        case .keyring(let domain, let code, _):
            domain == "g-io-error-quark" && code == Int(G_IO_ERROR_DBUS_ERROR.rawValue)
        default: false
        }
    }

    /// Whether the connection that produced this error can still be used.
    fileprivate var keepsConnection: Bool {
        switch self {
        case .locked, .ambiguous, .tooLarge, .invalidName, .invalidValue, .corrupt: true
        default: false
        }
    }
}
