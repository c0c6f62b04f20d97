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
    /// On KeePassXC, what the last lookup of each item (by item name) found in its collection,
    /// taken by the write that follows it: a write always follows a check of the stored item,
    /// so it can replace the secret in place (`Item.SetSecret`) without a search of its own.
    /// Dropped with the connection.
    private var lookups: [String: ItemLookup] = [:]
    /// Where each item (by name) was found by its last read, kept (unlike ``lookups``) so
    /// that the next check asks for its secret together with the search. Only a guess: the
    /// secret counts only when the search finds exactly that item. Dropped with the connection.
    private var itemPaths: [String: ItemLookup] = [:]
    /// Which provider answers; told when the service opens.
    private(set) var provider = SecretServiceProvider.other
    /// The transport session's algorithm (never `plain`: such a service is refused).
    private(set) var sessionAlgorithm = ""
    /// Whether this session has proven that both ends derived the same key: a write read
    /// back exactly as written, or a read that decrypted to a property list. Until then, every
    /// write is read back: a session whose two ends derived different keys (KWallet before
    /// KDE Frameworks 6.25 does so about once in a hundred sessions) can store garbage.
    var sessionVerified = false
    /// How many times a session is offered before the provider counts as refusing them.
    static let sessionAttempts = 3

    deinit { close() }

    /// The open service, opening it (with an encrypted transport session) when needed.
    ///
    /// Calls `sd_service_open` → `secret_service_open_sync` with the no-prompt subclass.
    func openService(_ cancellable: Cancellable) throws(SecureDictionaryError) -> UnsafeMutablePointer<SecretService> {
        if let service { return service }
        var opened: UnsafeMutablePointer<SecretService>?
        for attempt in 1...Self.sessionAttempts {
            var error: UnsafeMutablePointer<GError>?
            opened = sd_service_open(cancellable.pointer, &error)
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
        if algorithms == "plain" {
            g_object_unref(opened)
            throw .serviceUnavailable(reason: "the Secret Service offered no encrypted transport session")
        }
        service = opened
        sessionAlgorithm = algorithms
        provider = SecretServiceProvider(sd_service_provider(opened))
        sessionVerified = false
        return opened
    }

    /// Forgets the service; the next call opens a new one (e.g. after the daemon restarted).
    func close() {
        if let service { g_object_unref(service) }
        service = nil
        aliases.removeAll()
        lookups.removeAll()
        itemPaths.removeAll()
    }

    /// The cached path of `alias`, if read less than ``aliasLifetime`` ago.
    func cachedPath(of alias: String) -> String? {
        guard let entry = aliases[alias], ContinuousClock.now - entry.readAt < Self.aliasLifetime else { return nil }
        return entry.path
    }

    func remember(_ path: String, for alias: String) {
        aliases[alias] = (path, ContinuousClock.now)
    }

    /// Records what a lookup of `item` found in `collection` (`nil` path: no such item).
    func remember(itemPath: String?, of item: KeyringItem, in collection: String) {
        lookups[item.name] = ItemLookup(collection: collection, path: itemPath)
    }

    /// Where the last read of `item` found it in `collection`, if it found it there.
    func lastPath(of item: KeyringItem, in collection: String) -> String? {
        guard let known = itemPaths[item.name], known.collection == collection else { return nil }
        return known.path
    }

    /// Records where a read of `item` found it in `collection` (`nil`: nowhere).
    func rememberLastPath(_ path: String?, of item: KeyringItem, in collection: String) {
        itemPaths[item.name] = path.map { ItemLookup(collection: collection, path: $0) }
    }

    /// What the last lookup of `item` in `collection` found, forgotten as it is taken.
    func takeLookup(of item: KeyringItem, in collection: String) -> ItemLookup? {
        guard let lookup = lookups.removeValue(forKey: item.name), lookup.collection == collection else { return nil }
        return lookup
    }
}

/// The providers whose behaviour SecureDictionary adapts to.
enum SecretServiceProvider {
    /// KeePassXC: asks the user before `CreateItem` replaces an item, so an existing item's
    /// secret is replaced with `Item.SetSecret`.
    case keepassxc
    case kwallet
    /// gnome-keyring (it owns `org.gnome.keyring`): `CreateItem` with replace, which also
    /// tells watchers with `ItemChanged` (it sends nothing after `SetSecret`).
    case gnomeKeyring
    /// Every other: as gnome-keyring.
    case other

    /// How `secure-dict doctor` names it (`nil`: not told apart).
    var name: String? {
        switch self {
        case .keepassxc: "KeePassXC"
        case .kwallet: "KWallet"
        case .gnomeKeyring: "gnome-keyring"
        case .other: nil
        }
    }

    /// Whether a write may give the writer lock to the next writer as its `CreateItem` is
    /// sent, before the answer (``BusNameWriterLock`` rule 5). That needs a provider that
    /// handles the calls it receives one at a time, in the order they arrive, each finished
    /// before the next begins: the next writer's read, which arrives after the write, then
    /// sees it. Established from the provider's source, so only where it was read:
    /// gnome-keyring 42.1 runs every Secret Service method on its main thread, one GLib idle
    /// source per message in arrival order (GDBus skeletons without
    /// `HANDLE_METHOD_INVOCATIONS_IN_THREAD` or `g-authorize-method` handlers), and its
    /// `CreateItem` handler sets the item's attributes and secret with synchronous PKCS#11
    /// calls into its own store before it replies, never asking for a prompt (a locked
    /// collection is an `IsLocked` error). KWallet and KeePassXC are not established, nor
    /// is any other provider: their writes give the lock back after the answer.
    var handlesCallsInArrivalOrder: Bool { self == .gnomeKeyring }

    /// Whether a prompt the caller stops waiting for is dismissed (`Prompt.Dismiss`), or
    /// left to its user: gnome-keyring-daemon 42.1 aborts when a shown unlock prompt is
    /// dismissed, so neither it nor a provider not told apart is sent one.
    var dismissesPromptsOnCancel: Bool { self == .keepassxc || self == .kwallet }

    init(_ code: Int32) {
        switch code {
        case Int32(SD_PROVIDER_KEEPASSXC): self = .keepassxc
        case Int32(SD_PROVIDER_KWALLET): self = .kwallet
        case Int32(SD_PROVIDER_GNOME_KEYRING): self = .gnomeKeyring
        default: self = .other
        }
    }
}

/// Where a lookup found an item: its object path, or `nil` when the collection had none.
struct ItemLookup {
    let collection: String
    let path: String?
}

/// A `GCancellable`, which GLib documents as safe to cancel from any thread.
final class Cancellable: @unchecked Sendable {  // GCancellable is thread-safe
    let pointer: UnsafeMutablePointer<GCancellable>

    init() { pointer = sd_cancellable_new() }
    deinit { g_object_unref(pointer) }
    func cancel() { g_cancellable_cancel(pointer) }
    var isCancelled: Bool { g_cancellable_is_cancelled(pointer) != 0 }
    /// Whether a call under this cancellable ran a prompt (one that may wait for a human).
    var prompted: Bool { sd_cancellable_prompted(pointer) != 0 }
}

/// What one operation works with, on the lane's queue.
struct Call {
    let connection: LibSecretConnection
    let service: UnsafeMutablePointer<SecretService>
    let cancellable: Cancellable
}
