import CLibSecret
import CSecretShim

#if canImport(Glibc)
    import Glibc
#endif

/// One Swift function per Secret Service call, as swift-system wraps one C call per function:
/// the only Swift code that calls libsecret (and the shim's calls to the service). Each takes
/// plain Swift values, makes its call under the ``Call``'s cancellable, and reports a failure
/// through ``KeyringErrorMapping``. Which calls to make, and in what order, is
/// ``LibSecretClient``'s.
enum SecretServiceCalls {
    /// `secret_service_read_alias_dbus_path_sync`: the object path of the aliased collection
    /// (cached by the connection for a moment).
    static func collectionPath(_ call: Call, _ collection: KeyringCollection) throws(SecureDictionaryError) -> String {
        if let cached = call.connection.cachedPath(of: collection.alias) { return cached }
        var error: UnsafeMutablePointer<GError>?
        guard
            let path = secret_service_read_alias_dbus_path_sync(
                call.service, collection.alias, call.cancellable.pointer, &error)
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
    static func search(_ call: Call, attributes: [String: String], in collection: String) throws(SecureDictionaryError)
        -> (unlocked: [String], locked: [String])
    {
        let table = attributeTable(attributes)
        defer { g_hash_table_unref(table) }
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var error: UnsafeMutablePointer<GError>?
        defer {
            g_strfreev(unlocked)
            g_strfreev(locked)
        }
        guard
            secret_service_search_for_dbus_paths_sync(
                call.service, nil, table, call.cancellable.pointer, &unlocked, &locked, &error) != 0
        else { throw KeyringErrorMapping.map(error) }
        return (inCollection(strings(unlocked), collection), inCollection(strings(locked), collection))
    }

    /// `sd_search_reading_one`: the search, with the secret of `guess` asked for right behind
    /// it in the same round trip; `secret` is that secret when the service sent one.
    static func search(_ call: Call, attributes: [String: String], in collection: String, reading guess: String)
        throws(SecureDictionaryError) -> (unlocked: [String], locked: [String], secret: SecretBytes?)
    {
        let table = attributeTable(attributes)
        defer { g_hash_table_unref(table) }
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var value: OpaquePointer?
        var error: UnsafeMutablePointer<GError>?
        defer {
            g_strfreev(unlocked)
            g_strfreev(locked)
            if let value { secret_value_unref(UnsafeMutableRawPointer(value)) }
        }
        guard
            sd_search_reading_one(
                call.service, table, guess, &unlocked, &locked, &value, call.cancellable.pointer, &error) != 0
        else { throw KeyringErrorMapping.map(error) }
        return (
            inCollection(strings(unlocked), collection), inCollection(strings(locked), collection), value.map(bytes(of:))
        )
    }

    /// `secret_service_get_secret_for_dbus_path_sync`: a copy of the item's secret bytes.
    ///
    /// - Throws: ``SecureDictionaryError/locked`` when the service sent no secret and the
    ///   collection is locked now, ``SecureDictionaryError/sessionRejected(reason:)`` when it
    ///   sent one the session could not decrypt.
    static func secret(_ call: Call, path: String, collection: String) throws(SecureDictionaryError) -> SecretBytes {
        var error: UnsafeMutablePointer<GError>?
        guard let value = secret_service_get_secret_for_dbus_path_sync(call.service, path, call.cancellable.pointer, &error)
        else {
            if error != nil { throw KeyringErrorMapping.map(error) }
            // No secret and no error: the item was locked since the search, or libsecret could
            // not decrypt what arrived (the two ends of the session derived different keys).
            if try isLocked(call, collection: collection) { throw .locked }
            throw .sessionRejected(reason: "a secret arrived that the session could not decrypt")
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        return bytes(of: value)
    }

    /// `secret_service_create_item_dbus_path_sync` of an item with `label` and `attributes`,
    /// replacing an item with the same attributes (another process may have created it since
    /// the check). Returns the item's path. A prompt runs only inside ``confirming(_:_:)``.
    static func createItem(
        _ call: Call, _ secret: SecretBytes, label: String, attributes: [String: String],
        contentType: String = "application/octet-stream", in collection: String
    ) throws(SecureDictionaryError) -> String {
        let table = attributeTable(attributes)
        let properties = sd_item_properties_new(label, table)
        g_hash_table_unref(table)
        defer { g_hash_table_unref(properties) }
        var created = ""
        try withBorrowedValue(secret, contentType: contentType) { value throws(SecureDictionaryError) in
            var error: UnsafeMutablePointer<GError>?
            guard
                let path = secret_service_create_item_dbus_path_sync(
                    call.service, collection, properties, value, SECRET_ITEM_CREATE_REPLACE,
                    call.cancellable.pointer, &error)
            else { throw KeyringErrorMapping.map(error) }
            created = String(cString: path)
            g_free(path)
        }
        return created
    }

    /// `Item.SetSecret` on the item at `path` (`sd_item_set_secret`).
    static func setSecret(_ call: Call, _ secret: SecretBytes, path: String) throws(SecureDictionaryError) {
        try withBorrowedValue(secret) { value throws(SecureDictionaryError) in
            var error: UnsafeMutablePointer<GError>?
            if sd_item_set_secret(call.service, path, value, call.cancellable.pointer, &error) == 0 {
                throw KeyringErrorMapping.map(error)
            }
        }
    }

    /// `secret_service_delete_item_dbus_path_sync`. A prompt runs only inside ``confirming(_:_:)``.
    static func deleteItem(_ call: Call, path: String) throws(SecureDictionaryError) {
        var error: UnsafeMutablePointer<GError>?
        if secret_service_delete_item_dbus_path_sync(call.service, path, call.cancellable.pointer, &error) == 0 {
            throw KeyringErrorMapping.map(error)
        }
    }

    /// `secret_service_unlock_dbus_paths_sync`: how many of `paths` are unlocked now. A
    /// prompt runs only inside ``confirming(_:_:)``; elsewhere one that is needed is `locked`.
    static func unlock(_ call: Call, paths: [String]) throws(SecureDictionaryError) -> Int {
        var error: UnsafeMutablePointer<GError>?
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var pointers: [UnsafeMutablePointer<gchar>?] = paths.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        let count = pointers.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: UnsafePointer<gchar>?.self) { paths in
                secret_service_unlock_dbus_paths_sync(
                    call.service, paths.baseAddress, call.cancellable.pointer, &unlocked, &error)
            }
        }
        g_strfreev(unlocked)
        if count < 0 { throw KeyringErrorMapping.map(error) }
        return Int(count)
    }

    /// The `Locked` property of a collection (`sd_collection_is_locked`).
    static func isLocked(_ call: Call, collection: String) throws(SecureDictionaryError) -> Bool {
        var error: UnsafeMutablePointer<GError>?
        let answer = sd_collection_is_locked(call.service, collection, call.cancellable.pointer, &error)
        if answer < 0 { throw KeyringErrorMapping.map(error) }
        return answer != 0
    }

    /// The `Label` property of a collection (`sd_collection_label`).
    static func label(_ call: Call, collection: String) throws(SecureDictionaryError) -> String {
        var error: UnsafeMutablePointer<GError>?
        guard let label = sd_collection_label(call.service, collection, call.cancellable.pointer, &error) else {
            throw KeyringErrorMapping.map(error)
        }
        defer { g_free(label) }
        return String(cString: label)
    }

    /// The service's Collections property (`sd_service_collections`): every collection's path.
    static func collections(_ call: Call) throws(SecureDictionaryError) -> [String] {
        var error: UnsafeMutablePointer<GError>?
        guard let list = sd_service_collections(call.service, call.cancellable.pointer, &error) else {
            throw KeyringErrorMapping.map(error)
        }
        defer { g_strfreev(list) }
        return strings(list)
    }

    /// The item's Modified property (`sd_item_modified`): seconds since 1970, `nil` when the
    /// provider tells none.
    static func modified(_ call: Call, path: String) throws(SecureDictionaryError) -> Int64? {
        var error: UnsafeMutablePointer<GError>?
        let seconds = sd_item_modified(call.service, path, call.cancellable.pointer, &error)
        if seconds < 0 { throw KeyringErrorMapping.map(error) }
        return seconds == 0 ? nil : Int64(seconds)
    }

    /// The item's `Attributes` property (`sd_item_attributes`).
    static func attributes(_ call: Call, path: String) throws(SecureDictionaryError) -> [String: String] {
        var error: UnsafeMutablePointer<GError>?
        guard let table = sd_item_attributes(call.service, path, call.cancellable.pointer, &error) else {
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

    /// Whether the bus name `name` has an owner or can be activated (`sd_bus_name_presence`),
    /// asked until `deadline`.
    static func isAvailable(_ name: String, until deadline: MonotonicDeadline) throws(SecureDictionaryError) -> Bool {
        var error: UnsafeMutablePointer<GError>?
        let answer = sd_bus_name_presence(name, deadline.microseconds, &error)
        if answer < 0 { throw KeyringErrorMapping.map(error) }
        return answer != 0
    }

    /// Runs `body` with the service allowed to run confirmation prompts (never unlock
    /// prompts): a prompt that needs no human completes at once; one that waits for a human
    /// is dismissed at the deadline (where ``ProviderTraits/dismissesPrompts``) and throws
    /// ``SecureDictionaryError/confirmationRequired``.
    static func confirming<T>(_ call: Call, _ body: () throws(SecureDictionaryError) -> T) throws(SecureDictionaryError) -> T {
        sd_service_allow_confirmations(call.service, 1)
        defer { sd_service_allow_confirmations(call.service, 0) }
        return try body()
    }

    /// Whether a prompt the caller stops waiting for is dismissed (`sd_service_set_dismiss_on_cancel`).
    static func setDismissesPrompts(_ call: Call, _ dismisses: Bool) {
        sd_service_set_dismiss_on_cancel(call.service, dismisses ? 1 : 0)
    }

    // MARK: Values

    /// A `GHashTable` of `attributes` (release it with `g_hash_table_unref`).
    private static func attributeTable(_ attributes: [String: String]) -> OpaquePointer? {
        let table = sd_string_table_new()
        for (key, value) in attributes { sd_string_table_insert(table, key, value) }
        return table
    }

    /// A secret value's bytes, where libsecret decrypted them, kept alive by the view (no
    /// copy): libsecret keeps a decrypted secret in memory of its own that is locked, out of
    /// core dumps and wiped when freed (egg-secure-memory), where a copy would be one more
    /// in ordinary memory.
    private static func bytes(of value: OpaquePointer) -> SecretBytes {
        var length = 0
        guard let bytes = sd_value_bytes(value, &length), length > 0 else {
            return SecretBytes(copying: UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return SecretBytes(viewing: UnsafeRawBufferPointer(start: bytes, count: length), keptBy: HeldSecretValue(value))
    }

    /// Runs `body` with a SecretValue that borrows `secret`'s bytes (no copy): they outlive
    /// it, since libsecret encrypts them during the call and the value is released before
    /// `secret` is.
    private static func withBorrowedValue(
        _ secret: SecretBytes, contentType: String = "application/octet-stream",
        _ body: (OpaquePointer?) throws(SecureDictionaryError) -> Void
    ) throws(SecureDictionaryError) {
        try secret.withUnsafeBytes { bytes throws(SecureDictionaryError) in
            let value = sd_value_new_borrowing(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, contentType)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            try body(value)
        }
    }

    private static func inCollection(_ paths: [String], _ collection: String) -> [String] {
        let prefix = collection + "/"
        return paths.filter { $0.hasPrefix(prefix) }
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

/// A reference to a libsecret `SecretValue`, released when the last view of its bytes goes.
private final class HeldSecretValue: @unchecked Sendable {  // the value is never written; libsecret's refcount is atomic
    private let value: OpaquePointer

    init(_ value: OpaquePointer) {
        self.value = value
        _ = secret_value_ref(value)
    }

    deinit { secret_value_unref(UnsafeMutableRawPointer(value)) }
}
