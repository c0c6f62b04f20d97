public import Logging

extension SecureDictionary {
    /// How a ``SecureDictionary`` reaches its item.
    ///
    /// ```swift
    /// var options = SecureDictionary.Options()
    /// options.timeout = .seconds(1)          // deadline of every keyring call
    /// options.collection = .session          // gnome-keyring's in-memory collection
    /// options.failureHandler = { error in showBanner("Not saved: \(error)") }
    /// let cache = try SecureDictionary(name: "cache", options: options)
    /// ```
    public struct Options: Sendable {
        /// The default cap on the encoded dictionary: 4 MiB.
        public static let defaultMaximumSize = 4 * 1024 * 1024

        /// The collection that holds the item. Default: the `default` alias.
        public var collection: KeyringCollection
        /// The deadline of each public call, whatever it waits for: other threads of this
        /// process, other processes' writes, and the keyring calls it makes. Default: 3 seconds.
        /// A call past it throws ``SecureDictionaryError/timedOut`` (or
        /// ``SecureDictionaryError/lockHeld(pid:command:)`` when another process held the
        /// writer lock all along).
        public var timeout: Duration
        /// What a call does when the keyring is locked. Default: ``UnlockPolicy/never``, which
        /// throws ``SecureDictionaryError/locked`` and never shows a dialog.
        public var unlock: UnlockPolicy
        /// The largest encoded dictionary this instance writes or reads, in bytes (default:
        /// ``defaultMaximumSize``). Larger stored blobs are rejected by length before parsing;
        /// larger writes throw ``SecureDictionaryError/tooLarge(size:limit:)``.
        public var maximumSize: Int
        /// Where the item lives. Default: ``SecretServiceStore/shared``.
        public var store: any KeyringStore
        /// Called with every error that a non-throwing API cannot throw, each also logged (item
        /// name and error, never a key or value); the cache stays equal to the store either way:
        /// - a failed write through a subscript setter or ``SecureStored`` (logged at `error`);
        /// - a typed read or update that found another type and skipped it (at `debug`);
        /// - a failed reload after a change announced by the keyring (``SecureDictionary/changes()``).
        public var failureHandler: (@Sendable (SecureDictionaryError) -> Void)?
        /// Where diagnostics go: item names, entry counts, sizes and errors, never keys or
        /// values. Default: a logger labelled `SecureDictionary`.
        public var logger: Logger

        /// Options for a dictionary; every parameter has the default above.
        ///
        /// ```swift
        /// let options = SecureDictionary.Options(timeout: .seconds(10), unlock: .prompt(timeout: .seconds(60)))
        /// let tests = SecureDictionary.Options(store: InMemoryKeyringStore())
        /// ```
        public init(
            collection: KeyringCollection = .default,
            timeout: Duration = .seconds(3),
            unlock: UnlockPolicy = .never,
            maximumSize: Int = Options.defaultMaximumSize,
            store: any KeyringStore = SecretServiceStore.shared,
            failureHandler: (@Sendable (SecureDictionaryError) -> Void)? = nil,
            logger: Logger = Logger(label: "SecureDictionary")
        ) {
            self.collection = collection
            self.timeout = timeout
            self.unlock = unlock
            self.maximumSize = maximumSize
            self.store = store
            self.failureHandler = failureHandler
            self.logger = logger
        }

        var context: OperationContext {
            OperationContext(
                timeout: timeout, unlock: unlock, limits: PropertyListLimits(maximumSize: maximumSize), logger: logger)
        }
    }
}

extension SecureDictionary.Options {
    /// What a call does when it finds the keyring locked.
    ///
    /// ```swift
    /// // A desktop app: ask the user to unlock, and wait up to a minute for them.
    /// let settings = try await SecureDictionary.Async.open(name: "settings", options: .init(unlock: .prompt()))
    /// ```
    public enum UnlockPolicy: Sendable, Equatable {
        /// Throw ``SecureDictionaryError/locked``; never show a dialog. Right for tools and
        /// services, where nobody may be there to answer.
        case never
        /// Ask the keyring to show its unlock dialog (and KeePassXC its access dialog), wait for
        /// the user up to `timeout` (separate from ``SecureDictionary/Options/timeout``, which
        /// still bounds each keyring call), then go on. What each answer throws, and how each
        /// provider's dialog behaves: <doc:UnlockingTheKeyring>.
        case prompt(timeout: Duration = .seconds(60))
    }
}
