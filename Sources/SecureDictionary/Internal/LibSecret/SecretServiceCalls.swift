import CLibSecret
import CSecretShim

/// One Swift function per Secret Service call (as swift-system wraps one C call per function),
/// the only Swift code that calls libsecret: plain Swift values in, the ``Call``'s cancellable,
/// failures through ``KeyringErrorMapping``. Which calls, in what order, is ``LibSecretClient``'s.
enum SecretServiceCalls {
    /// `secret_service_read_alias_dbus_path_sync`: the object path of the aliased collection
    /// (cached by the connection for a moment).
    static func collectionPath(_ call: Call, _ collection: KeyringCollection) throws(SecureDictionaryError) -> String {
        try call.connection.path(of: collection.alias) { () throws(SecureDictionaryError) in
            var error: UnsafeMutablePointer<GError>?
            guard
                let path = secret_service_read_alias_dbus_path_sync(
                    call.service, collection.alias, call.cancellable.pointer, &error)
            else {
                if error != nil { throw KeyringErrorMapping.map(error) }
                throw .noSuchCollection(alias: collection.alias)  // ReadAlias answered "/"
            }
            defer { g_free(path) }
            return String(cString: path)
        }
    }

    /// `secret_service_search_for_dbus_paths_sync`, narrowed to the items of one collection;
    /// with a `guess`, `sd_search_reading_one`, whose `secret` counts only when the search found
    /// exactly that item.
    static func search(_ call: Call, attributes: [String: String], in collection: String, reading guess: String? = nil)
        throws(SecureDictionaryError) -> (unlocked: [String], locked: [String], secret: SecretBytes?)
    {
        let table = attributeTable(attributes)
        defer { g_hash_table_unref(table) }
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var value: OpaquePointer?
        defer {
            g_strfreev(unlocked)
            g_strfreev(locked)
            if let value { secret_value_unref(UnsafeMutableRawPointer(value)) }
        }
        try checked { error in
            if let guess {
                sd_search_reading_one(call.service, table, guess, &unlocked, &locked, &value, call.cancellable.pointer, &error)
            } else {
                secret_service_search_for_dbus_paths_sync(
                    call.service, nil, table, call.cancellable.pointer, &unlocked, &locked, &error)
            }
        }
        let unlockedHere = strings(unlocked).filter { $0.hasPrefix(collection + "/") }
        let lockedHere = strings(locked).filter { $0.hasPrefix(collection + "/") }
        let exact = guess.map { unlockedHere == [$0] && lockedHere.isEmpty } ?? false
        return (unlockedHere, lockedHere, exact ? value.map(bytes(of:)) : nil)
    }

    /// `secret_service_get_secret_for_dbus_path_sync`: the item's secret bytes (``bytes(of:)``).
    ///
    /// - Throws: ``SecureDictionaryError/locked`` when the service sent no secret and the
    ///   collection is locked now, ``SecureDictionaryError/sessionRejected(reason:)`` when it
    ///   sent one the session could not decrypt.
    static func secret(_ call: Call, path: String, collection: String) throws(SecureDictionaryError) -> SecretBytes {
        var error: UnsafeMutablePointer<GError>?
        guard let value = secret_service_get_secret_for_dbus_path_sync(call.service, path, call.cancellable.pointer, &error)
        else {
            if error != nil { throw KeyringErrorMapping.map(error) }
            // No secret and no error: locked since the search, or not decryptable (keys differ).
            if try isLocked(call, collection: collection) { throw .locked }
            throw .sessionRejected(reason: "a secret arrived that the session could not decrypt")
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        return bytes(of: value)
    }

    /// `secret_service_create_item_dbus_path_sync`, replacing an item with the same attributes
    /// (another process may have created it since the check), ``confirming(_:dismissing:_:)``: the item's path.
    static func createItem(
        _ call: Call, _ secret: SecretBytes, label: String, attributes: [String: String],
        contentType: String = "application/octet-stream", in collection: String
    ) throws(SecureDictionaryError) -> String {
        let table = attributeTable(attributes)
        let properties = sd_item_properties_new(label, table)
        g_hash_table_unref(table)
        defer { g_hash_table_unref(properties) }
        return try withBorrowedValue(secret, contentType: contentType) { value throws(SecureDictionaryError) in
            var error: UnsafeMutablePointer<GError>?
            let path = confirming(call) {
                secret_service_create_item_dbus_path_sync(
                    call.service, collection, properties, value, SECRET_ITEM_CREATE_REPLACE, call.cancellable.pointer, &error)
            }
            guard let path else { throw KeyringErrorMapping.map(error) }
            defer { g_free(path) }
            return String(cString: path)
        }
    }

    /// `Item.SetSecret` on the item at `path` (`sd_item_set_secret`).
    static func setSecret(_ call: Call, _ secret: SecretBytes, path: String) throws(SecureDictionaryError) {
        try withBorrowedValue(secret) { value throws(SecureDictionaryError) in
            try checked { sd_item_set_secret(call.service, path, value, call.cancellable.pointer, &$0) }
        }
    }

    /// `secret_service_delete_item_dbus_path_sync`, ``confirming(_:dismissing:_:)``.
    static func deleteItem(_ call: Call, path: String) throws(SecureDictionaryError) {
        try checked { error in
            confirming(call) { secret_service_delete_item_dbus_path_sync(call.service, path, call.cancellable.pointer, &error) }
        }
    }

    /// `secret_service_unlock_dbus_paths_sync`: how many of `paths` are unlocked now. A needed
    /// prompt is `locked`, except inside ``confirming(_:dismissing:_:)``.
    static func unlock(_ call: Call, paths: [String]) throws(SecureDictionaryError) -> Int {
        var error: UnsafeMutablePointer<GError>?
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var pointers: [UnsafePointer<gchar>?] = paths.map { UnsafePointer(strdup($0)) } + [nil]
        defer { for pointer in pointers { free(UnsafeMutablePointer(mutating: pointer)) } }
        let count = secret_service_unlock_dbus_paths_sync(call.service, &pointers, call.cancellable.pointer, &unlocked, &error)
        g_strfreev(unlocked)
        if count < 0 { throw KeyringErrorMapping.map(error) }
        return Int(count)
    }

    /// The `Locked` property of a collection; a malformed answer is locked, never open.
    static func isLocked(_ call: Call, collection: String) throws(SecureDictionaryError) -> Bool {
        try property(call, collection, "Collection", "Locked", type: "b") { g_variant_get_boolean($0) != 0 } ?? true
    }

    static func label(_ call: Call, collection: String) throws(SecureDictionaryError) -> String {
        try property(call, collection, "Collection", "Label", type: "s") { String(cString: g_variant_get_string($0, nil)) } ?? ""
    }

    static func collections(_ call: Call) throws(SecureDictionaryError) -> [String] {
        try property(call, "/org/freedesktop/secrets", "Service", "Collections", type: "ao") { value in
            let list = g_variant_dup_objv(value, nil)
            defer { g_strfreev(list) }
            return strings(list)
        } ?? []
    }

    /// The item's Modified property: seconds since 1970, `nil` when the provider tells none.
    static func modified(_ call: Call, path: String) throws(SecureDictionaryError) -> Int64? {
        let seconds = try property(call, path, "Item", "Modified", type: "t") { g_variant_get_uint64($0) } ?? 0
        return seconds == 0 ? nil : Int64(clamping: seconds)
    }

    static func attributes(_ call: Call, path: String) throws(SecureDictionaryError) -> [String: String] {
        try property(call, path, "Item", "Attributes", type: "a{ss}") { value in
            var result: [String: String] = [:]
            for index in 0..<g_variant_n_children(value) {
                let entry = g_variant_get_child_value(value, index)
                let key = g_variant_get_child_value(entry, 0)
                let text = g_variant_get_child_value(entry, 1)
                result[String(cString: g_variant_get_string(key, nil))] = String(cString: g_variant_get_string(text, nil))
                g_variant_unref(text)
                g_variant_unref(key)
                g_variant_unref(entry)
            }
            return result
        } ?? [:]
    }

    /// Property `name` of `org.freedesktop.Secret.<interface>` at `path`, as `read` reads it; `nil`
    /// when it is not of `type`.
    private static func property<T>(
        _ call: Call, _ path: String, _ interface: String, _ name: String, type: String, _ read: (OpaquePointer) -> T
    ) throws(SecureDictionaryError) -> T? {
        var value: OpaquePointer?
        try checked {
            sd_object_property(
                call.service, path, "org.freedesktop.Secret." + interface, name, type, &value, call.cancellable.pointer, &$0)
        }
        guard let value else { return nil }
        defer { g_variant_unref(value) }
        return read(value)
    }

    /// Runs `body` with the service allowed to run the prompts it returns: KeePassXC returns one
    /// from every `CreateItem` and `Item.Delete`, completed at once when nothing needs confirming.
    /// One that waits for a human is ``SecureDictionaryError/confirmationRequired`` at the
    /// deadline, dismissed if `dismissing` (``ProviderTraits/dismissesPrompts``).
    static func confirming<T, E: Error>(_ call: Call, dismissing: Bool = true, _ body: () throws(E) -> T) throws(E) -> T {
        sd_service_allow_confirmations(call.service, 1, dismissing ? 1 : 0)
        defer { sd_service_allow_confirmations(call.service, 0, 1) }
        return try body()
    }

    /// Runs a C call that returns 0 and sets its `GError` when it fails, and throws that error.
    private static func checked(_ body: (inout UnsafeMutablePointer<GError>?) -> gboolean) throws(SecureDictionaryError) {
        var error: UnsafeMutablePointer<GError>?
        if body(&error) == 0 { throw KeyringErrorMapping.map(error) }
    }

    // MARK: Values

    /// A `GHashTable` of `attributes` (release it with `g_hash_table_unref`).
    private static func attributeTable(_ attributes: [String: String]) -> OpaquePointer? {
        let table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)
        for (key, value) in attributes { g_hash_table_insert(table, g_strdup(key), g_strdup(value)) }
        return table
    }

    /// A secret value's bytes where libsecret decrypted them, kept alive by the view: that memory
    /// is locked, out of core dumps and wiped when freed (egg-secure-memory); a copy would not be.
    private static func bytes(of value: OpaquePointer) -> SecretBytes {
        var length: gsize = 0
        guard let bytes = secret_value_get(value, &length), length > 0 else {
            return SecretBytes(copying: UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return SecretBytes(viewing: UnsafeRawBufferPointer(start: bytes, count: Int(length)), keptBy: HeldSecretValue(value))
    }

    /// Runs `body` with a SecretValue that borrows `secret`'s bytes (their owner wipes them):
    /// `secret_value_new` would make one more copy per write. They outlive the value, which
    /// libsecret encrypts during the call and which is released first.
    private static func withBorrowedValue<T>(
        _ secret: SecretBytes, contentType: String = "application/octet-stream",
        _ body: (OpaquePointer?) throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        try secret.withUnsafeBytes { bytes throws(SecureDictionaryError) in
            let start = UnsafeMutablePointer(mutating: bytes.baseAddress?.assumingMemoryBound(to: gchar.self))
            let value = secret_value_new_full(start, bytes.count, contentType) { _ in }
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            return try body(value)
        }
    }

    private static func strings(_ list: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?) -> [String] {
        guard let list else { return [] }
        return sequence(first: list) { $0 + 1 }.prefix { $0.pointee != nil }.map { String(cString: $0.pointee!) }
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
