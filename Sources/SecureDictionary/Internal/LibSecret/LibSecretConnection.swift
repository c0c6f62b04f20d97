import CLibSecret
import CSecretShim
import ProcessSpawning

/// A Secret Service connection, confined to the queue of one `DeadlineLane` generation.
final class LibSecretConnection: @unchecked Sendable {  // touched only on its lane's serial queue
    private var service: UnsafeMutablePointer<SecretService>?
    // Each cache below is dropped with the connection.
    /// Collection paths by alias, with when each was read: `ReadAlias` costs a round trip per
    /// call otherwise. Kept ``aliasLifetime``, so a re-pointed alias is seen within seconds.
    private var aliases: [String: (path: String, readAt: ContinuousClock.Instant)] = [:]
    static let aliasLifetime = Duration.seconds(2)
    /// What the last read of each item (by name) found: the next check asks for its secret
    /// with the search (a guess, see ``SecretServiceCalls/search(_:attributes:in:reading:)``), and
    /// the write that always follows takes it if `awaitsWrite`: where
    /// ``ProviderTraits/replacesSecretInPlace`` it needs no search of its own, and a session's
    /// first write knows what it replaces.
    private var lookups: [String: (collection: String, path: String?, awaitsWrite: Bool)] = [:]
    /// Which provider answers, once asked (``provider(_:)``).
    private var detectedProvider: ProviderTraits?
    /// The transport session's algorithm (never `plain`: such a service is refused).
    private(set) var sessionAlgorithm = ""
    /// Whether this session proved that both ends derived the same key (a write read back
    /// exactly, or a read that decrypted to a property list); until then every write is read back.
    var sessionVerified = false
    /// How many times a session is offered before the provider counts as refusing them.
    static let sessionAttempts = 3
    /// Whether the service is opened with a transport session (not for ``LibSecretClient/forDialogs()``).
    private let opensSession: Bool

    init(opensSession: Bool) { self.opensSession = opensSession }

    deinit { close() }

    /// The open service, opened when needed (with a transport session if ``opensSession``); a
    /// session bus that does not answer by `deadline` is ``SecureDictionaryError/timedOut``.
    func openService(_ cancellable: Cancellable, until deadline: Deadline) throws(SecureDictionaryError)
        -> UnsafeMutablePointer<SecretService>
    {
        if let service { return service }
        var opened: UnsafeMutablePointer<SecretService>?
        for attempt in 1...Self.sessionAttempts {
            var error: UnsafeMutablePointer<GError>?
            opened = sd_service_open(deadline.glibMicroseconds, opensSession ? 1 : 0, cancellable.pointer, &error)
            if opened != nil { break }
            // KWallet 5 rejects about one public key in 200 as "invalid" (it mishandles a key
            // with leading zero bytes); a new session brings a new key.
            guard KeyringErrorMapping.isRejectedSession(error) else { throw KeyringErrorMapping.map(error, connecting: true) }
            if attempt == Self.sessionAttempts {
                throw .sessionRejected(reason: KeyringErrorMapping.map(error, connecting: true).description)
            }
            g_error_free(error)
        }
        guard let opened else { throw .serviceUnavailable(reason: "the Secret Service could not be opened") }
        let algorithms = secret_service_get_session_algorithms(opened).map { String(cString: $0) } ?? "plain"
        if opensSession && algorithms == "plain" {
            g_object_unref(opened)
            throw .serviceUnavailable(reason: "the Secret Service offered no encrypted transport session")
        }
        service = opened
        sessionAlgorithm = algorithms
        detectedProvider = nil
        sessionVerified = false
        return opened
    }

    /// Which provider answers (``ProviderTraits/busNames``), asked of the bus in one round trip
    /// the first time a call needs it (a first read never does). Needs an open service.
    func provider(_ cancellable: Cancellable) -> ProviderTraits {
        if let detectedProvider { return detectedProvider }
        guard let service else { return .other }
        let candidates = ProviderTraits.providers.flatMap { row in row.busNames.map { (row, $0) } }
        var names: [UnsafePointer<CChar>?] = candidates.map { UnsafePointer(strdup($0.1)) }
        defer { for name in names { free(UnsafeMutablePointer(mutating: name)) } }
        let found = Int(sd_service_owner_among(service, &names, Int32(names.count), cancellable.pointer))
        let detected = found >= 0 ? candidates[found].0 : .other
        detectedProvider = detected
        ErrorContext.record(provider: detected.name)  // so that errors name it
        return detected
    }

    /// Forgets the service; the next call opens a new one (e.g. after the daemon restarted).
    func close() {
        if let service { g_object_unref(service) }
        service = nil
        aliases.removeAll()
        lookups.removeAll()
    }

    /// The path of `alias`: the cached one if read less than ``aliasLifetime`` ago, else `read()`'s.
    func path(of alias: String, _ read: () throws(SecureDictionaryError) -> String) throws(SecureDictionaryError) -> String {
        if let entry = aliases[alias], ContinuousClock.now - entry.readAt < Self.aliasLifetime { return entry.path }
        let path = try read()
        aliases[alias] = (path, ContinuousClock.now)
        return path
    }

    /// Records what a read of `item` found in `collection` (`nil`: no such item), for the
    /// write that follows too if `forWrite`.
    func remember(_ path: String?, of item: KeyringItem, in collection: String, forWrite: Bool) {
        lookups[item.name] = (collection, path, forWrite)
    }

    /// Where the last read of `item` found it in `collection`, if it found it there.
    func lastPath(of item: KeyringItem, in collection: String) -> String? {
        guard let known = lookups[item.name], known.collection == collection else { return nil }
        return known.path
    }

    /// Where the last read of `item` found it in `collection`, for the one write that follows it.
    func takePath(of item: KeyringItem, in collection: String) -> String? {
        guard let entry = lookups[item.name], entry.awaitsWrite else { return nil }
        lookups[item.name]?.awaitsWrite = false
        return entry.collection == collection ? entry.path : nil
    }
}

extension Deadline {
    /// The same moment on `g_get_monotonic_time`'s clock (microseconds), which the shim's waits end by.
    var glibMicroseconds: gint64 { g_get_monotonic_time() + gint64(remaining.microseconds) }
}

/// A `GCancellable`, which GLib documents as safe to cancel from any thread.
final class Cancellable: @unchecked Sendable {  // GCancellable is thread-safe
    let pointer: UnsafeMutablePointer<GCancellable>

    init() { pointer = sd_cancellable_new() }
    deinit { g_object_unref(pointer) }
    func cancel() { g_cancellable_cancel(pointer) }
    /// Whether a call under this cancellable ran a prompt (one that may wait for a human).
    var prompted: Bool { sd_cancellable_prompted(pointer) != 0 }
}

/// What one operation works with, on the lane's queue.
struct Call {
    let connection: LibSecretConnection
    let service: UnsafeMutablePointer<SecretService>
    let cancellable: Cancellable
    /// Which try of the operation this is, from 1 to ``LibSecretConnection/sessionAttempts``.
    let attempt: Int

    /// Whether an error that asks for a fresh connection ends the operation instead.
    var isLastAttempt: Bool { attempt >= LibSecretConnection.sessionAttempts }
}
