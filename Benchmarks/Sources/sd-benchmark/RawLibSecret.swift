import CRawLibSecret

/// A failed raw libsecret call (the GError's domain, code and message; never secret bytes).
struct RawLibSecretError: Error, CustomStringConvertible {
    let description: String

    init(_ call: String, _ error: UnsafeMutablePointer<GError>?) {
        if let error {
            let domain = g_quark_to_string(error.pointee.domain).map { String(cString: $0) } ?? "?"
            let message = error.pointee.message.map { String(cString: $0) } ?? ""
            description = "\(call) failed: \(domain) \(error.pointee.code): \(message)"
            g_error_free(error)
        } else {
            description = "\(call) failed without an error"
        }
    }
}

/// The physical floor: libsecret's own password API, called directly, on libsecret's shared
/// `SecretService` (one encrypted transport session, opened by the first call).
///
/// - store: `secret_password_storev_binary_sync` = one `CreateItem` (replace) on the
///   `/org/freedesktop/secrets/aliases/default` path.
/// - lookup: `secret_password_lookupv_binary_sync` = `SearchItems` + `GetSecrets`.
///
/// Items use their own schema (`io.github.securedictionary.benchmark.Raw`) with the same
/// attribute names as SecureDictionary's, and their own attribute values, so they never
/// match a SecureDictionary item; they live in the same (default) collection.
final class RawLibSecret {
    static let schemaName = "io.github.securedictionary.benchmark.Raw"
    private let schema: UnsafeMutablePointer<SecretSchema>

    init() {
        let types = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, nil)
        for name in ["service", "application", "dictionary"] {
            // GINT_TO_POINTER(SECRET_SCHEMA_ATTRIBUTE_STRING) is NULL.
            g_hash_table_insert(types, UnsafeMutableRawPointer(g_strdup(name)), nil)
        }
        schema = secret_schema_newv(Self.schemaName, SECRET_SCHEMA_NONE, types)
        g_hash_table_unref(types)
    }

    deinit { secret_schema_unref(schema) }

    /// The attributes of the raw item `service` (as `secret-tool search service …` sees it).
    static func attributes(service: String) -> [String: String] {
        ["service": service, "application": "io.github.securedictionary.benchmark.raw", "dictionary": service]
    }

    /// `secret_password_storev_binary_sync`: creates or replaces the item with `bytes`.
    func store(_ bytes: [UInt8], service: String) throws {
        let table = Self.table(Self.attributes(service: service))
        defer { g_hash_table_unref(table) }
        let value = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                secret_value_new($0.baseAddress, gssize($0.count), "application/octet-stream")
            }
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        var error: UnsafeMutablePointer<GError>?
        if secret_password_storev_binary_sync(schema, table, nil, service, value, nil, &error) == 0 {
            throw RawLibSecretError("secret_password_storev_binary_sync", error)
        }
    }

    /// `secret_password_lookupv_binary_sync`: the secret's length (the bytes are not copied
    /// out: this is the floor a load is compared with), or nil when there is no such item.
    func lookupLength(service: String) throws -> Int? {
        try withLookup(service: service) { pointer, length in length }
    }

    /// `secret_password_lookupv_binary_sync`, copied into an array.
    func lookup(service: String) throws -> [UInt8]? {
        try withLookup(service: service) { pointer, length in
            Array(UnsafeRawBufferPointer(start: pointer, count: length))
        }
    }

    private func withLookup<T>(service: String, _ body: (UnsafeRawPointer?, Int) -> T) throws -> T? {
        let table = Self.table(Self.attributes(service: service))
        defer { g_hash_table_unref(table) }
        var error: UnsafeMutablePointer<GError>?
        guard let value = secret_password_lookupv_binary_sync(schema, table, nil, &error) else {
            if error != nil { throw RawLibSecretError("secret_password_lookupv_binary_sync", error) }
            return nil
        }
        return withBytes(of: value, body)
    }

    /// `secret_password_clearv_sync`: removes the item; whether there was one.
    @discardableResult
    func clear(service: String) throws -> Bool {
        let table = Self.table(Self.attributes(service: service))
        defer { g_hash_table_unref(table) }
        var error: UnsafeMutablePointer<GError>?
        let removed = secret_password_clearv_sync(schema, table, nil, &error)
        if error != nil { throw RawLibSecretError("secret_password_clearv_sync", error) }
        return removed != 0
    }

    /// A new `GHashTable` of `attributes` (keys and values copied); its caller unrefs it.
    fileprivate static func table(_ attributes: [String: String]) -> OpaquePointer {
        let table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free)!
        for (key, value) in attributes {
            g_hash_table_insert(table, UnsafeMutableRawPointer(g_strdup(key)), UnsafeMutableRawPointer(g_strdup(value)))
        }
        return table
    }
}

/// Single D-Bus round trips, timed one by one to show where a SecureDictionary call spends
/// its time. Uses libsecret's shared service and its dbus-path API, as the library does.
final class RoundTrips {
    private let service: UnsafeMutablePointer<SecretService>

    init() throws {
        var error: UnsafeMutablePointer<GError>?
        guard let service = secret_service_get_sync(SECRET_SERVICE_OPEN_SESSION, nil, &error) else {
            throw RawLibSecretError("secret_service_get_sync", error)
        }
        self.service = service
    }

    deinit { g_object_unref(service) }

    /// `org.freedesktop.DBus.RequestName` then `ReleaseName` of a name nobody else wants: what
    /// the library's cross-process writer lock costs per write when nobody waits.
    func requestAndReleaseName() throws {
        let bus = g_dbus_proxy_get_connection(UnsafeMutableRawPointer(service).assumingMemoryBound(to: GDBusProxy.self))
        for method in ["RequestName", "ReleaseName"] {
            var error: UnsafeMutablePointer<GError>?
            let parameters =
                method == "RequestName"
                ? g_variant_new_tuple(
                    [g_variant_new_string("io.github.securedictionary.benchmark.probe"), g_variant_new_uint32(0)], 2)
                : g_variant_new_tuple([g_variant_new_string("io.github.securedictionary.benchmark.probe")], 1)
            guard
                let reply = g_dbus_connection_call_sync(
                    bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", method, parameters,
                    nil, G_DBUS_CALL_FLAGS_NONE, -1, nil, &error)
            else {
                throw RawLibSecretError("g_dbus_connection_call_sync(\(method))", error)
            }
            g_variant_unref(reply)
        }
    }

    /// `org.freedesktop.Secret.Service.ReadAlias("default")`.
    func readAlias() throws -> String {
        var error: UnsafeMutablePointer<GError>?
        guard let path = secret_service_read_alias_dbus_path_sync(service, "default", nil, &error) else {
            throw RawLibSecretError("secret_service_read_alias_dbus_path_sync", error)
        }
        defer { g_free(path) }
        return String(cString: path)
    }

    /// `org.freedesktop.Secret.Service.SearchItems` with `attributes` (exact match); the
    /// first unlocked path, or nil.
    func search(_ attributes: [String: String]) throws -> String? {
        let table = RawLibSecret.table(attributes)
        defer { g_hash_table_unref(table) }
        var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var locked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
        var error: UnsafeMutablePointer<GError>?
        defer {
            g_strfreev(unlocked)
            g_strfreev(locked)
        }
        if secret_service_search_for_dbus_paths_sync(service, nil, table, nil, &unlocked, &locked, &error) == 0 {
            throw RawLibSecretError("secret_service_search_for_dbus_paths_sync", error)
        }
        guard let first = unlocked?[0] else { return nil }
        return String(cString: first)
    }

    /// The raw item's attributes as `SearchItems` matches them (with its `xdg:schema`).
    static func rawSearchAttributes(service: String) -> [String: String] {
        var attributes = RawLibSecret.attributes(service: service)
        attributes["xdg:schema"] = RawLibSecret.schemaName
        return attributes
    }

    /// `org.freedesktop.Secret.Service.GetSecrets` for one item path; the secret's length.
    func secretLength(path: String) throws -> Int {
        try withSecret(path: path) { _, length in length }
    }

    /// `org.freedesktop.Secret.Service.GetSecrets` for one item path, copied out.
    func secret(path: String) throws -> [UInt8] {
        try withSecret(path: path) { pointer, length in Array(UnsafeRawBufferPointer(start: pointer, count: length)) }
    }

    /// `org.freedesktop.Secret.Item.SetSecret` on one item path: replaces an existing
    /// item's secret with no prompt on every provider (KeePassXC 2.7.4 asks its user before
    /// `CreateItem` with replace from another process replaces an item).
    func setSecret(path: String, _ bytes: [UInt8]) throws {
        let value = bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                secret_value_new($0.baseAddress, gssize($0.count), "application/octet-stream")
            }
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        guard let secret = secret_service_encode_dbus_secret(service, value) else {
            throw BenchmarkError("the secret could not be encoded for the session")
        }
        let proxy = UnsafeMutableRawPointer(service).assumingMemoryBound(to: GDBusProxy.self)
        var error: UnsafeMutablePointer<GError>?
        guard
            let reply = g_dbus_connection_call_sync(
                g_dbus_proxy_get_connection(proxy), g_dbus_proxy_get_name(proxy), path, "org.freedesktop.Secret.Item",
                "SetSecret", g_variant_new_tuple([secret], 1), nil, G_DBUS_CALL_FLAGS_NO_AUTO_START, -1, nil, &error)
        else {
            throw RawLibSecretError("g_dbus_connection_call_sync(SetSecret)", error)
        }
        g_variant_unref(reply)
    }

    private func withSecret<T>(path: String, _ body: (UnsafeRawPointer?, Int) -> T) throws -> T {
        var error: UnsafeMutablePointer<GError>?
        guard let value = secret_service_get_secret_for_dbus_path_sync(service, path, nil, &error) else {
            throw RawLibSecretError("secret_service_get_secret_for_dbus_path_sync", error)
        }
        return withBytes(of: value, body)
    }
}

/// Calls `body` with the bytes of `value` (a `SecretValue`), then releases it.
private func withBytes<T>(of value: OpaquePointer, _ body: (UnsafeRawPointer?, Int) -> T) -> T {
    defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
    var length = 0
    let pointer = secret_value_get(value, &length)
    return body(UnsafeRawPointer(pointer), length)
}
