package import Logging
public import SecureDictionary
import Synchronization

/// The store that works here, chosen once, never silently a weaker one: the Secret Service
/// when one answers; inside a sandbox without it, the Secret portal's files; otherwise the
/// ``EncryptedFileStore`` the application configured, and only if it configured one.
///
/// ```swift
/// // Desktop: the keyring. Over SSH, in CI or a container without one: files under a
/// // passphrase kept for the login session. With neither, a typed error says so.
/// let options = SecureDictionary.Options(
///     store: .automatic(fileStore: EncryptedFileStore(keySource: .passphrase(.terminal()))))
/// let settings = try SecureDictionary(name: "settings", options: options)
/// ```
///
/// The choice is made on the first call that needs a store, kept, and recorded in the file
/// store's folder: a keyring that stops answering later is an error, never a switch to files
/// (the rules: AutomaticStore+Choice.swift; <doc:MachinesWithoutADesktop>). `choice` says what
/// was chosen and why; choosing the files is logged at `info`.
///
/// - Throws (from every call): ``FileStoreError/noStoreAvailable(reason:)`` when
///   nothing fits; `SecureDictionaryError.serviceUnavailable(reason:)` when the keyring this
///   store chose before is not running; `SecureDictionaryError.timedOut` when the bus did not
///   answer, or the keyring it starts did not come, by the deadline (nothing is chosen then);
///   what the chosen store throws.
public final class AutomaticStore: KeyringStore, CoordinatedStore, PlaceChoosingStore {
    /// What was chosen.
    public enum Chosen: Sendable, Equatable {
        /// The keyring (`SecretServiceStore`): one answered.
        case secretService
        /// ``EncryptedFileStore/secretPortal``: a sandbox without the keyring.
        case secretPortal
        /// The ``EncryptedFileStore`` the application gave: no keyring, no sandbox.
        case encryptedFiles
    }

    /// What was chosen, and why, in words for a person.
    public struct Choice: Sendable, Equatable, CustomStringConvertible {
        /// The store chosen.
        public let chosen: Chosen
        /// Why, e.g. `no D-Bus session bus`.
        public let reason: String
        /// The store and the reason, e.g. `encrypted files (no D-Bus session bus)`.
        public var description: String {
            switch chosen {
            case .secretService: "the Secret Service (\(reason))"
            case .secretPortal: "the Secret portal's encrypted files (\(reason))"
            case .encryptedFiles: "encrypted files (\(reason))"
            }
        }
    }

    /// The automatic store without a file store: the Secret Service, or the Secret portal
    /// inside a sandbox.
    public static let shared = AutomaticStore()

    /// The file store used where no Secret Service answers outside a sandbox.
    public let fileStore: EncryptedFileStore?
    let secretService: SecretServiceStore
    let portal: EncryptedFileStore
    private let decided = Mutex<(store: any KeyringStore, choice: Choice)?>(nil)
    private let deciding = LockQueue()
    let logger = Logger(label: "SecureDictionary")

    /// - Parameters:
    ///   - fileStore: the store to use where no keyring answers, outside a sandbox; `nil`:
    ///     none (then such a machine gets ``FileStoreError/noStoreAvailable(reason:)``).
    ///   - secretService: the keyring's store. Default: `SecretServiceStore.shared`.
    ///   - portal: the store inside a sandbox. Default: ``EncryptedFileStore/secretPortal``.
    public init(
        fileStore: EncryptedFileStore? = nil, secretService: SecretServiceStore = .shared,
        portal: EncryptedFileStore = .secretPortal
    ) {
        self.fileStore = fileStore
        self.secretService = secretService
        self.portal = portal
    }

    /// What was chosen; `nil` before the first call.
    public var choice: Choice? { decided.withLock { $0?.choice } }

    /// Makes the choice now (if not made yet) and says what it is.
    ///
    /// - Throws: what every call throws (see ``AutomaticStore``); after `timedOut` nothing is
    ///   chosen, and the next call tries again.
    @discardableResult
    public func choose(timeout: Duration = .seconds(3)) throws(SecureDictionaryError) -> Choice {
        try decide(until: Deadline(after: timeout)).choice
    }

    public func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes? {
        let deadline = Deadline(after: timeout)
        return try decide(until: deadline).store.load(item, timeout: deadline.remainingForCall())
    }

    public func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        let deadline = Deadline(after: timeout)
        try decide(until: deadline).store.store(secret, for: item, timeout: deadline.remainingForCall())
    }

    public func delete(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> Bool {
        let deadline = Deadline(after: timeout)
        return try decide(until: deadline).store.delete(item, timeout: deadline.remainingForCall())
    }

    public func listItems(applicationID: String?, collection: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [KeyringItemListing]
    {
        let deadline = Deadline(after: timeout)
        return try decide(until: deadline).store.listItems(
            applicationID: applicationID, collection: collection, timeout: deadline.remainingForCall())
    }

    package func writerLock(for item: KeyringItem, logger: Logger) -> any ItemWriterLock {
        ChosenStoreLock(automatic: self) { $0.writerLock(for: item, logger: logger) }
    }

    package func writeLock(for item: KeyringItem, logger: Logger) -> (any ItemWriterLock)? {
        ChosenStoreLock(automatic: self) { $0.writeLock(for: item, logger: logger) }
    }

    package func watchChanges(_ onChange: @escaping @Sendable (KeyringChange) -> Void) -> (any ChangeWatch)? {
        guard let store = decided.withLock({ $0?.store }) as? any CoordinatedStore else { return nil }
        return store.watchChanges(onChange)
    }

    /// The chosen store's; `nil` until the first call chooses it.
    package var place: String? { (decided.withLock({ $0?.store }) as? any CoordinatedStore)?.place }

    package func choosePlace(until deadline: Deadline) throws(SecureDictionaryError) -> String? {
        (try decide(until: deadline).store as? any CoordinatedStore)?.place
    }

    /// The chosen store, choosing it first if needed (one thread at a time).
    func decide(until deadline: Deadline) throws(SecureDictionaryError) -> (store: any KeyringStore, choice: Choice) {
        if let decided = decided.withLock({ $0 }) { return decided }
        guard deciding.enter(until: deadline) else { throw .timedOut }
        defer { deciding.leave() }
        if let decided = decided.withLock({ $0 }) { return decided }
        let made = try makeChoice(until: deadline)
        decided.withLock { $0 = made }
        if made.choice.chosen == .encryptedFiles {
            logger.info("the automatic store chose the encrypted files", metadata: ["store": "\(made.choice)"])
        } else {
            logger.debug("store chosen", metadata: ["store": "\(made.choice)"])
        }
        return made
    }
}

/// The writer lock (or the write lock) of the store ``AutomaticStore`` chose: chosen when
/// first taken (a dictionary's init loads before it writes, so the choice is made by then).
private final class ChosenStoreLock: ItemWriterLock {
    private let automatic: AutomaticStore
    /// The chosen store's lock.
    private let pick: @Sendable (any CoordinatedStore) -> (any ItemWriterLock)?
    private let inner = Mutex<(any ItemWriterLock)??>(nil)
    /// The queue when the store chosen has no such lock.
    private let ownQueue = LockQueue()

    init(automatic: AutomaticStore, pick: @escaping @Sendable (any CoordinatedStore) -> (any ItemWriterLock)?) {
        self.automatic = automatic
        self.pick = pick
    }

    func queue(until deadline: Deadline) throws(SecureDictionaryError) -> LockQueue {
        try resolved(until: deadline)?.queue(until: deadline) ?? ownQueue
    }

    func acquire(waitingUntil waitDeadline: Deadline, answeringBy answerDeadline: Deadline) throws(SecureDictionaryError)
        -> Bool
    {
        let later = answerDeadline.instant > waitDeadline.instant ? answerDeadline : waitDeadline
        return try resolved(until: later)?.acquire(waitingUntil: waitDeadline, answeringBy: answerDeadline) ?? false
    }

    func release() {
        if case .some(.some(let lock)) = inner.withLock({ $0 }) { lock.release() }
    }

    private func resolved(until deadline: Deadline) throws(SecureDictionaryError) -> (any ItemWriterLock)? {
        if case .some(let lock) = inner.withLock({ $0 }) { return lock }
        let store = try automatic.decide(until: deadline).store
        let lock = (store as? any CoordinatedStore).flatMap(pick)
        inner.withLock { $0 = .some(lock) }
        return lock
    }
}

extension KeyringStore where Self == AutomaticStore {
    /// An ``AutomaticStore``: the Secret Service when one answers, the Secret portal inside
    /// a sandbox, else `fileStore` (if given).
    ///
    /// ```swift
    /// let options = SecureDictionary.Options(store: .automatic(fileStore: .init(keySource: .systemdCredential())))
    /// ```
    /// Without `fileStore`, ``AutomaticStore/shared``; make one store with a file store and
    /// keep it, so that every dictionary of the process shares its choice and its caches.
    public static func automatic(fileStore: EncryptedFileStore? = nil) -> AutomaticStore {
        fileStore.map { AutomaticStore(fileStore: $0) } ?? .shared
    }
}
