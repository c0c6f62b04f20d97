import CLibSecret
import CSecretShim

// A connection to the Secret Service and what one call works with. Touched only on the
// queue of the client's `DeadlineLane`.

/// A Secret Service connection, confined to the queue of one `DeadlineLane` generation.
final class LibSecretConnection: @unchecked Sendable {  // touched only on its lane's serial queue
    private var service: UnsafeMutablePointer<SecretService>?
    /// Collection paths by alias, each with when it was read: `ReadAlias` costs a round trip
    /// per call otherwise. Kept briefly (``aliasLifetime``), so a re-pointed alias is seen
    /// within seconds, and dropped with the connection.
    private var aliases: [String: (path: String, readAt: ContinuousClock.Instant)] = [:]
    static let aliasLifetime = Duration.seconds(2)

    deinit { close() }

    /// The open service, opening it (with an encrypted transport session) when needed.
    ///
    /// Calls `sd_service_open` → `secret_service_open_sync` with the no-prompt subclass.
    func openService(_ cancellable: Cancellable) throws(SecureDictionaryError) -> UnsafeMutablePointer<SecretService> {
        if let service { return service }
        var error: UnsafeMutablePointer<GError>?
        guard let opened = sd_service_open(cancellable.pointer, &error) else {
            let mapped = KeyringErrorMapping.map(error, connecting: true)
            throw mapped
        }
        let algorithms = secret_service_get_session_algorithms(opened).map { String(cString: $0) } ?? "plain"
        if algorithms == "plain" {
            g_object_unref(opened)
            throw .serviceUnavailable(reason: "the Secret Service offered no encrypted transport session")
        }
        service = opened
        return opened
    }

    /// Forgets the service; the next call opens a new one (e.g. after the daemon restarted).
    func close() {
        if let service { g_object_unref(service) }
        service = nil
        aliases.removeAll()
    }

    /// The cached path of `alias`, if read less than ``aliasLifetime`` ago.
    func cachedPath(of alias: String) -> String? {
        guard let entry = aliases[alias], ContinuousClock.now - entry.readAt < Self.aliasLifetime else { return nil }
        return entry.path
    }

    func remember(_ path: String, for alias: String) {
        aliases[alias] = (path, ContinuousClock.now)
    }
}

/// A `GCancellable`, which GLib documents as safe to cancel from any thread.
final class Cancellable: @unchecked Sendable {  // GCancellable is thread-safe
    let pointer: UnsafeMutablePointer<GCancellable>

    init() { pointer = g_cancellable_new() }
    deinit { g_object_unref(pointer) }
    func cancel() { g_cancellable_cancel(pointer) }
}

/// What one operation works with, on the lane's queue.
struct Call {
    let connection: LibSecretConnection
    let service: UnsafeMutablePointer<SecretService>
    let cancellable: Cancellable
}
