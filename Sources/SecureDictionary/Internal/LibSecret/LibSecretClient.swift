import CSecretShim

/// The operations SecureDictionary makes on the Secret Service: which calls
/// (``SecretServiceCalls``) in what order, each on a ``DeadlineLane``.
struct LibSecretClient: Sendable {
    let lane: DeadlineLane<LibSecretConnection>
    #if ENABLE_TESTING_HOOKS
        /// Writes to mangle on their way out.
        let fault: ManglingFault?
        /// Runs between a write that is read back and its read-back.
        let beforeReadBack: (@Sendable () -> Void)?

        init(fault: ManglingFault? = nil, beforeReadBack: (@Sendable () -> Void)? = nil, opensSession: Bool = true) {
            self.fault = fault
            self.beforeReadBack = beforeReadBack
            lane = DeadlineLane(label: "SecureDictionary.keyring") { LibSecretConnection(opensSession: opensSession) }
        }
    #else
        init(opensSession: Bool = true) {
            lane = DeadlineLane(label: "SecureDictionary.keyring") { LibSecretConnection(opensSession: opensSession) }
        }
    #endif

    /// A client of its own for a provider's dialog, so the store's calls go on while the user
    /// takes a minute. No transport session (its calls move no secret); the process's one bus
    /// connection, so the provider knows the same client (KeePassXC remembers a confirmation per connection).
    static func forDialogs() -> LibSecretClient { LibSecretClient(opensSession: false) }

    /// Runs `operation` on the lane with a deadline, again on a fresh connection when the
    /// connection died or its session is unfit (``failure(after:attempt:outcomeUnknown:)``).
    /// `writes`: a try that died with its connection may have landed. `explainsSandbox`:
    /// `serviceUnavailable` in a sandbox names the missing permission instead.
    func perform<T: Sendable>(
        timeout: Duration, writes: Bool = false, explainsSandbox: Bool = true,
        _ operation: @escaping @Sendable (Call) throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        let cancellable = Cancellable()
        let deadline = Deadline(after: timeout)
        let result = lane.run(timeout: timeout, interrupt: { cancellable.cancel() }) { connection in
            var attempt = 0
            var outcomeUnknown = false
            while true {
                attempt += 1
                do throws(SecureDictionaryError) {
                    let service = try connection.openService(cancellable, until: deadline)
                    let call = Call(connection: connection, service: service, cancellable: cancellable, attempt: attempt)
                    return Result<T, SecureDictionaryError>.success(try operation(call))
                } catch {
                    // The message of these names the provider's own fix (SecureDictionaryError.description).
                    if error == .locked || error == .confirmationRequired { _ = connection.provider(cancellable) }
                    if error.keepsConnection == false { connection.close() }
                    outcomeUnknown = writes && (outcomeUnknown || error.leavesWriteOutcomeUnknown)
                    guard let failure = Self.failure(after: error, attempt: attempt, outcomeUnknown: outcomeUnknown) else {
                        continue
                    }
                    return .failure(failure)
                }
            }
        }
        // Stopped at its deadline while a prompt was up: it waited for a human, not a hung keyring.
        guard let result else { throw cancellable.prompted ? .confirmationRequired : .timedOut }
        if explainsSandbox, case .failure(.serviceUnavailable) = result, let sandbox = Sandbox.current {
            throw .sandboxed(advice: sandbox.advice)
        }
        return try result.get()
    }

    /// What a failed try of ``perform(timeout:writes:explainsSandbox:_:)`` ends in: `nil` for
    /// another try on a fresh connection, else the error to throw. A write whose try died with
    /// the connection may have landed, whatever a later try says. (A read's later try gives its
    /// own answer: once a read that met a restarted daemon turned a missing collection into `connectionLost`.)
    static func failure(after error: SecureDictionaryError, attempt: Int, outcomeUnknown: Bool) -> SecureDictionaryError? {
        if error.deservesFreshConnection && attempt < LibSecretConnection.sessionAttempts { return nil }
        if outcomeUnknown && !error.leavesWriteOutcomeUnknown { return .connectionLost }
        return error
    }

    // MARK: Operations

    func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes? {
        try perform(timeout: timeout) { [self] call throws(SecureDictionaryError) in
            try Self.matchingPaths(call, item, readingLastPath: true) {
                paths, collection, guessed throws(SecureDictionaryError) in
                if paths.count > 1 { throw .ambiguous(count: paths.count) }
                // For the write that follows where it replaces in place or must keep what it
                // replaces (the first write of a session): no work for the others.
                let forWrite =
                    !call.connection.sessionVerified || call.connection.provider(call.cancellable).replacesSecretInPlace
                call.connection.remember(paths.first, of: item, in: collection, forWrite: forWrite)
                guard let path = paths.first else { return nil }
                let read =
                    if let guessed { guessed } else { try SecretServiceCalls.secret(call, path: path, collection: collection) }
                let secret = garbled(read)
                // A property list proves both ends derived the same key (under another key
                // its 8 magic bytes come once in 2^64; a test's `fault` stands for such keys).
                // Anything else on an unproven session is read again on a new one where
                // ``ProviderTraits/sessionKeysMayDiffer``; the last try's bytes go to the decoder.
                if !call.connection.sessionVerified {
                    if !secret.hasPrefix(Self.propertyListMagic) {
                        if !call.isLastAttempt, call.connection.provider(call.cancellable).sessionKeysMayDiffer {
                            throw .sessionRejected(reason: "a secret decrypted to no property list")
                        }
                    } else if !manglesSecrets {
                        call.connection.sessionVerified = true
                    }
                }
                return secret
            }
        }
    }

    /// How every blob SecureDictionary writes begins.
    private static let propertyListMagic = Array("bplist00".utf8)

    func delete(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> Bool {
        try perform(timeout: timeout, writes: true) { call throws(SecureDictionaryError) in
            try Self.matchingPaths(call, item) { paths, _, _ throws(SecureDictionaryError) in
                for path in paths { try SecretServiceCalls.deleteItem(call, path: path) }
                return !paths.isEmpty
            }
        }
    }

    func listItems(applicationID: String?, collection alias: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [KeyringItemListing]
    {
        try perform(timeout: timeout) { call throws(SecureDictionaryError) in
            let collection = try SecretServiceCalls.collectionPath(call, alias)
            var attributes = ["xdg:schema": KeyringItem.schemaName]
            attributes["application"] = applicationID
            let found = try SecretServiceCalls.search(call, attributes: attributes, in: collection)
            if found.unlocked.isEmpty, found.locked.isEmpty, try SecretServiceCalls.isLocked(call, collection: collection) {
                throw .locked
            }
            var listings: [KeyringItemListing] = []
            for (paths, isLocked) in [(found.unlocked, false), (found.locked, true)] {
                for path in paths {
                    let stored = try SecretServiceCalls.attributes(call, path: path)
                    if let listing = KeyringItemListing(attributes: stored, collection: alias, isLocked: isLocked) {
                        listings.append(listing)
                    }
                }
            }
            return listings.sorted { $0.item.name < $1.item.name }
        }
    }

    /// Opens the service and describes it and the collection behind `alias` (no prompt, no change).
    func diagnose(_ alias: KeyringCollection, timeout: Duration) throws(SecureDictionaryError) -> SecretServiceDiagnosis {
        let deadline = Deadline(after: timeout)
        var diagnosis = try perform(timeout: timeout) { call throws(SecureDictionaryError) in
            var diagnosis = SecretServiceDiagnosis(
                providerName: call.connection.provider(call.cancellable).name,
                sessionAlgorithm: call.connection.sessionAlgorithm)
            do throws(SecureDictionaryError) {
                let path = try SecretServiceCalls.collectionPath(call, alias)
                diagnosis.collection = .init(
                    path: path, label: try SecretServiceCalls.label(call, collection: path),
                    isLocked: try SecretServiceCalls.isLocked(call, collection: path))
            } catch .noSuchCollection {
                diagnosis.collection = nil
            }
            return diagnosis
        }
        diagnosis.providerPID = SessionBusName.ownerPID(of: SessionBusName.secretService, until: deadline)
        return diagnosis
    }

    // MARK: Finding the item

    /// Runs `body` with the paths of the unlocked items matching `item` in its collection, that
    /// collection's path and, with `readingLastPath`, the secret at the last read's path when the
    /// search found exactly that item (``ProviderTraits/readsSecretWithSearch``).
    ///
    /// - Throws: as ``unlockedMatches(_:_:in:reading:)``, and ``SecureDictionaryError/locked``
    ///   when none matches and the collection is locked: only an unlocked one can say "no such item".
    static func matchingPaths<T>(
        _ call: Call, _ item: KeyringItem, readingLastPath: Bool = false,
        _ body: (_ paths: [String], _ collection: String, _ guessed: SecretBytes?) throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        let collection = try SecretServiceCalls.collectionPath(call, item.collection)
        return try unlockingWithoutPrompt(call, collection) { () throws(SecureDictionaryError) in
            // The provider is asked only once there is a guess: a first read makes no call for it.
            let last = readingLastPath ? call.connection.lastPath(of: item, in: collection) : nil
            let guess = last.flatMap { call.connection.provider(call.cancellable).readsSecretWithSearch ? $0 : nil }
            let found = try unlockedMatches(call, item, in: collection, reading: guess)
            if found.paths.isEmpty, try SecretServiceCalls.isLocked(call, collection: collection) { throw .locked }
            return try body(found.paths, collection, found.secret)
        }
    }

    /// The path of the one unlocked item matching `item` in `collection`, or `nil`.
    static func existingPath(_ call: Call, _ item: KeyringItem, in collection: String) throws(SecureDictionaryError)
        -> String?
    {
        let paths = try unlockedMatches(call, item, in: collection).paths
        if paths.count > 1 { throw .ambiguous(count: paths.count) }
        return paths.first
    }

    /// The items matching `item` in `collection`, all unlocked, and the secret of `guess`
    /// (``SecretServiceCalls/search(_:attributes:in:reading:)``).
    ///
    /// - Throws: ``SecureDictionaryError/locked`` when one is locked, or
    ///   ``SecureDictionaryError/confirmationRequired`` (``lockedItemsMeanConfirmation(_:_:)``).
    ///   Not `Service.Unlock` on them, which opens a dialog: a deadline is too short for a person,
    ///   and KeePassXC 2.7.4 does not close it when the prompt is dismissed (it then took 12 s to
    ///   exit on SIGTERM instead of 0.2 s); only where the caller opted in (``confirmAccessInteractively(to:timeout:)``).
    private static func unlockedMatches(_ call: Call, _ item: KeyringItem, in collection: String, reading guess: String? = nil)
        throws(SecureDictionaryError) -> (paths: [String], secret: SecretBytes?)
    {
        let found = try SecretServiceCalls.search(call, attributes: item.attributes, in: collection, reading: guess)
        guard found.locked.isEmpty else {
            throw try lockedItemsMeanConfirmation(call, collection) ? .confirmationRequired : .locked
        }
        return (found.unlocked, found.secret)
    }

    /// Whether items reported locked in `collection` wait for the user's confirmation, not for an
    /// unlock: the collection is unlocked, and ``ProviderTraits/lockedItemsMeanConfirmation``.
    static func lockedItemsMeanConfirmation(_ call: Call, _ collection: String) throws(SecureDictionaryError) -> Bool {
        guard call.connection.provider(call.cancellable).lockedItemsMeanConfirmation else { return false }
        return try !SecretServiceCalls.isLocked(call, collection: collection)
    }

    /// Runs `body`; if it finds the collection locked, unlocks it without a prompt and runs
    /// `body` once more: gnome-keyring reloads password-less collections locked after a restart.
    /// One that needs a prompt stays locked, and `body`'s `locked` stands.
    static func unlockingWithoutPrompt<T>(
        _ call: Call, _ collection: String, _ body: () throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        do {
            return try body()
        } catch .locked {
            let unlocked: Bool
            do {
                unlocked = try SecretServiceCalls.unlock(call, paths: [collection]) > 0
            } catch .locked {
                unlocked = false  // a prompt would have been needed
            }
            guard unlocked else { throw .locked }
            return try body()
        }
    }
}

extension SecureDictionaryError {
    /// Whether a retry on a new connection may succeed (every operation is idempotent): the
    /// connection died, or the service answered with a D-Bus error libsecret did not name (as a
    /// session the restarted daemon no longer knows).
    fileprivate var deservesFreshConnection: Bool {
        switch self {
        case .connectionLost, .sessionRejected, .writeNotVerified: true
        case .keyring(let domain, let code, _):
            domain == "g-io-error-quark" && code == Int(G_IO_ERROR_DBUS_ERROR.rawValue)
        default: false
        }
    }

    /// Whether the connection that produced this error stays: the service answered. Closing on
    /// KeePassXC's `confirmationRequired` opened a new session for every refused call (46 in the
    /// 50 operations after a restart; ConnectionCount).
    fileprivate var keepsConnection: Bool {
        switch self {
        case .locked, .ambiguous, .tooLarge, .invalidName, .invalidValue, .corrupt, .unlockDismissed,
            .confirmationRequired:
            true
        default: false
        }
    }
}
