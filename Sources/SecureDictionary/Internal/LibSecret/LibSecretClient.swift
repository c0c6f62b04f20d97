import CLibSecret
import CSecretShim

// With the rest of Internal/LibSecret/, the only code of the library that touches libsecret
// and GLib. One internal function per kind of call; `KeyringErrorMapping` turns a GError into
// a SecureDictionaryError. Every call runs on a `DeadlineLane`, so none can outlive its deadline.

/// The libsecret calls SecureDictionary makes, each against the collection behind an alias.
struct LibSecretClient: Sendable {
    let lane = DeadlineLane(label: "SecureDictionary.keyring") { LibSecretConnection() }
    /// Tests only: writes to mangle on their way out.
    let fault: ManglingFault?
    /// Tests only: runs between a write that is read back and its read-back.
    let beforeReadBack: (@Sendable () -> Void)?

    init(fault: ManglingFault? = nil, beforeReadBack: (@Sendable () -> Void)? = nil) {
        self.fault = fault
        self.beforeReadBack = beforeReadBack
    }

    /// Runs `operation` on the lane with a deadline, reconnecting once when the connection
    /// turns out to be dead (the daemon restarted). `lock`: the writer lock a write may hand
    /// on as it is sent; once it has, the write is not tried again.
    func perform<T: Sendable>(
        timeout: Duration, handingOn lock: BusNameWriterLock? = nil,
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
                    let failure = Self.failure(
                        after: error, attempt: attempt, outcomeUnknown: outcomeUnknown,
                        lockHandedOn: lock?.nameHandedOn ?? false)
                    guard let failure else { continue }
                    return .failure(failure)
                }
            }
        }
        // A call stopped at its deadline while a confirmation prompt was up waited for a
        // human, not for a hung keyring (the prompt was dismissed on the way out).
        guard let result else { throw cancellable.prompted ? .confirmationRequired : .timedOut }
        return try result.get()
    }

    /// What a failed try of ``perform(timeout:handingOn:_:)`` ends in: `nil` for another try
    /// on a fresh connection, else the error to throw.
    ///
    /// - A try that failed with the connection is tried again, up to
    ///   ``LibSecretConnection/sessionAttempts`` tries, unless its write handed the writer
    ///   lock on: the next writer may have written since, and another try would write over
    ///   it. Its outcome is then unknown (``SecureDictionaryError/connectionLost``).
    /// - A write whose first try died with the connection may have landed, whatever a later
    ///   try says: its outcome stays unknown.
    static func failure(
        after error: SecureDictionaryError, attempt: Int, outcomeUnknown: Bool, lockHandedOn: Bool
    ) -> SecureDictionaryError? {
        if error.deservesFreshConnection {
            if lockHandedOn { return error.leavesWriteOutcomeUnknown ? error : .connectionLost }
            if attempt < LibSecretConnection.sessionAttempts { return nil }
        }
        if outcomeUnknown && !error.leavesWriteOutcomeUnknown { return .connectionLost }
        return error
    }

    // MARK: Operations

    func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes? {
        try perform(timeout: timeout) { [fault] call throws(SecureDictionaryError) in
            try Self.matchingPaths(call, item, readingLastPath: true) {
                paths, collection, guessed throws(SecureDictionaryError) in
                if paths.count > 1 { throw .ambiguous(count: paths.count) }
                call.connection.rememberLastPath(paths.first, of: item, in: collection)
                // Used by KeePassXC's writes (`replaceInPlace`) and by the first write of a
                // session (to keep what it replaces): no work for the others.
                if call.connection.provider == .keepassxc || !call.connection.sessionVerified {
                    call.connection.remember(itemPath: paths.first, of: item, in: collection)
                }
                guard let path = paths.first else { return nil }
                let secret: SecretBytes
                if let guessed {
                    secret = guessed
                } else {
                    secret = try Self.secret(call.service, path: path, collection: collection, call.cancellable)
                }
                // A secret that decrypted to a property list proves what the read-back of a
                // session's first write checks: both ends derived the same key (under another
                // key each block decrypts to random bytes; 8 of them match the magic once in
                // 2^64). `fault` stands for a session whose keys differ, which decrypts no read.
                if !call.connection.sessionVerified, fault == nil, secret.hasPrefix(Self.propertyListMagic) {
                    call.connection.sessionVerified = true
                }
                return secret
            }
        }
    }

    /// How every blob SecureDictionary writes begins.
    private static let propertyListMagic = Array("bplist00".utf8)

    /// Writes `secret` to `item`. When a try on a session not yet proven may have stored
    /// garbage and no later try stored `secret` faithfully, puts back what the item held.
    ///
    /// - Throws: ``SecureDictionaryError/writeNotVerified(restored:)`` when every try read
    ///   back other bytes than written; otherwise the last try's error (after the same
    ///   attempt to put the previous content back, when a try may have damaged the item).
    ///
    /// `lock`, held by the caller, is handed on as the write is sent where that is safe
    /// (``BusNameWriterLock`` rule 5); the caller's ``BusNameWriterLock/release()`` stays due.
    func store(
        _ secret: SecretBytes, for item: KeyringItem, timeout: Duration, handingOn lock: BusNameWriterLock? = nil
    ) throws(SecureDictionaryError) {
        let deadline = Deadline(after: timeout)
        let attempt = VerifiedWrite()
        do {
            try perform(timeout: timeout, handingOn: lock) { [fault, beforeReadBack] call throws(SecureDictionaryError) in
                let collection = try Self.collectionPath(call, item.collection)
                try Self.unlockingWithoutPrompt(call, collection) { () throws(SecureDictionaryError) in
                    // A write whose lock went on with it is not sent again, even after the
                    // unlock: the next writer may have written since. It was answered
                    // "locked", so nothing was written.
                    guard lock?.nameHandedOn != true else { throw .locked }
                    try Self.write(
                        call, secret, to: item, in: collection, attempt: attempt, fault: fault, beforeReadBack: beforeReadBack,
                        handingOn: lock)
                }
            }
        } catch {
            // Nothing is put back once the lock went on: the next writer may have written.
            guard attempt.mayHaveDamaged, lock?.nameHandedOn != true else { throw error }
            let restored = restore(attempt.prior, of: item, until: deadline)
            if attempt.readBackDiffered { throw .writeNotVerified(restored: restored) }
            // A write the keyring stored but no read-back confirmed, which could not be undone:
            // what the item holds is unknown, so the error must say so (the cache is then
            // reloaded). One the keyring refused ("locked") wrote nothing: its error stands.
            if !restored && attempt.unconfirmedWriteStored && !error.leavesWriteOutcomeUnknown {
                throw .writeNotVerified(restored: false)
            }
            throw error
        }
    }

    /// Puts back `prior`, what an item held before a write that may have damaged it, verified
    /// the same way; whether that worked. Removes the item if there was none (and checks).
    private func restore(_ prior: VerifiedWrite.Prior?, of item: KeyringItem, until deadline: Deadline) -> Bool {
        guard let prior, deadline.remaining > .zero else { return false }
        do throws(SecureDictionaryError) {
            switch prior {
            case .absent:
                _ = try delete(item, timeout: deadline.remaining)
                return try load(item, timeout: deadline.remaining) == nil
            case .bytes(let bytes):
                try perform(timeout: deadline.remaining) { [fault] call throws(SecureDictionaryError) in
                    let collection = try Self.collectionPath(call, item.collection)
                    try Self.unlockingWithoutPrompt(call, collection) { () throws(SecureDictionaryError) in
                        try Self.write(call, bytes, to: item, in: collection, attempt: nil, fault: fault)
                    }
                }
                return true
            }
        } catch {
            return false
        }
    }

    /// Sends `secret` to `item` (mangled, in tests, when `fault` says so) and, until this
    /// session has proven itself, reads it back. Before the first bytes of `attempt` leave,
    /// records in it what the item held.
    ///
    /// - Throws: ``SecureDictionaryError/writeNotVerified(restored:)`` when the bytes read
    ///   back differ from `secret` (the caller's retry then uses a new session).
    private static func write(
        _ call: Call, _ secret: SecretBytes, to item: KeyringItem, in collection: String, attempt: VerifiedWrite?,
        fault: ManglingFault?, beforeReadBack: (@Sendable () -> Void)? = nil, handingOn lock: BusNameWriterLock? = nil
    ) throws(SecureDictionaryError) {
        let verifying = !call.connection.sessionVerified
        // Where the check before this write found the item (`nil`: no check on this session).
        var found = call.connection.takeLookup(of: item, in: collection)
        var searchedJustNow = false
        if verifying, let attempt, attempt.needsPrior {
            // "No such item" from an earlier check may be stale: removing an item another
            // process created since would be worse than one more search.
            if found?.path == nil {
                found = ItemLookup(collection: collection, path: try existingPath(call, item, in: collection))
                searchedJustNow = true
            }
            if let path = found?.path {
                attempt.record(.bytes(try Self.secret(call.service, path: path, collection: collection, call.cancellable)))
            } else {
                attempt.record(.absent)
            }
        }
        let sent = fault?.takeOne() == true ? ManglingFault.mangled(secret) : secret
        attempt?.sending(onVerifiedSession: !verifying)
        let path =
            call.connection.provider == .keepassxc
            ? try replaceInPlace(call, sent, item: item, in: collection, knownPath: found?.path, searchedJustNow: searchedJustNow)
            : try create(
                call, sent, item: item, in: collection,
                // A write that is read back holds the lock until the read-back: the next
                // writer must not write before it.
                handingOn: !verifying && call.connection.provider.handlesCallsInArrivalOrder ? lock : nil)
        guard verifying else { return }
        attempt?.stored()
        beforeReadBack?()
        // A session whose ends derived different keys stores garbage about once in 256
        // writes and fails to decrypt almost every read: one exact read-back proves the keys
        // match, for every later write on this session.
        let stored = try Self.secret(call.service, path: path, collection: collection, call.cancellable)
        guard stored.holdsSameBytes(as: secret) else {
            attempt?.readBackDiffers()
            throw .writeNotVerified(restored: false)
        }
        attempt?.readBackMatches()
        call.connection.sessionVerified = true
    }

    /// Replaces the secret of the existing item in place (`Item.SetSecret`), or creates the
    /// item when there is none; returns its path. The path comes from the check that precedes
    /// every write (``load(_:timeout:)``), else from a search.
    ///
    /// For KeePassXC, which asks the user before it lets `CreateItem` replace an item (2.7.4;
    /// fixed in 2.7.6), while `SetSecret` needs no confirmation. The label and attributes of
    /// an existing item already follow the contract (it was found by them).
    private static func replaceInPlace(
        _ call: Call, _ secret: SecretBytes, item: KeyringItem, in collection: String, knownPath: String?,
        searchedJustNow: Bool
    ) throws(SecureDictionaryError) -> String {
        // A found path is used as is (a stale one fails, and is looked up again); "no such
        // item" is checked once more (unless it was just now), since a CreateItem that meets
        // an item another process created meanwhile would ask the user (one search, once per
        // item's life).
        var path = knownPath
        if path == nil && !searchedJustNow { path = try existingPath(call, item, in: collection) }
        if let known = path {
            do {
                try setSecret(call, secret, path: known)
                return known
            } catch .connectionLost {
                // The item may have been removed since the check (the provider answers
                // NoSuchObject or UnknownObject): look again before creating one.
                if let found = try existingPath(call, item, in: collection) {
                    try setSecret(call, secret, path: found)
                    return found
                }
            }
        }
        return try create(call, secret, item: item, in: collection, handingOn: nil)
    }

    /// The path of the one unlocked item matching `item` in `collection`, or `nil`.
    private static func existingPath(_ call: Call, _ item: KeyringItem, in collection: String) throws(SecureDictionaryError)
        -> String?
    {
        let found = try accessibleItems(call, item, in: collection)
        if !found.locked.isEmpty { throw .locked }
        if found.unlocked.count > 1 { throw .ambiguous(count: found.unlocked.count) }
        return found.unlocked.first
    }

    /// The items matching `item` in `collection`, as `search` finds them.
    ///
    /// - Throws: ``SecureDictionaryError/confirmationRequired`` for KeePassXC's access
    ///   confirmation. With "Confirm when passwords are retrieved by clients" (its default),
    ///   KeePassXC reports every item this client was not yet allowed to read as locked, in a
    ///   collection that is unlocked; `Service.Unlock` on such items opens a dialog that waits
    ///   for the user. It is not opened: a call's deadline is too short for a person, and
    ///   KeePassXC 2.7.4 does not close that dialog when the prompt is dismissed (by its
    ///   source; measured: it then took 12 s to exit on SIGTERM instead of 0.2 s).
    private static func accessibleItems(_ call: Call, _ item: KeyringItem, in collection: String)
        throws(SecureDictionaryError) -> (unlocked: [String], locked: [String])
    {
        let found = try search(call.service, attributes: item.attributes, in: collection, call.cancellable)
        if !found.locked.isEmpty, call.connection.provider == .keepassxc,
            try !isLocked(call.service, collection: collection, call.cancellable)
        {
            throw .confirmationRequired
        }
        return found
    }

    /// As ``accessibleItems(_:_:in:)``; when `readingLastPath`, with the secret of the path the
    /// last read found the item at asked for right behind the search (`sd_search_reading_one`):
    /// `guessed` is that secret when the search found exactly that item, unlocked. Not on
    /// KeePassXC, where a read of an item this client may not yet read asks its user.
    private static func accessibleItems(_ call: Call, _ item: KeyringItem, in collection: String, readingLastPath: Bool)
        throws(SecureDictionaryError) -> (unlocked: [String], locked: [String], guessed: SecretBytes?)
    {
        guard readingLastPath, call.connection.provider != .keepassxc,
            let guess = call.connection.lastPath(of: item, in: collection)
        else {
            let found = try accessibleItems(call, item, in: collection)
            return (found.unlocked, found.locked, nil)
        }
        let attributes = item.attributes
        let table = sd_attributes_new(
            attributes["service"], attributes["application"], attributes["dictionary"], attributes["xdg:schema"])
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
        else {
            throw KeyringErrorMapping.map(error)
        }
        let prefix = collection + "/"
        let found = (strings(unlocked).filter { $0.hasPrefix(prefix) }, strings(locked).filter { $0.hasPrefix(prefix) })
        guard found.0 == [guess], found.1.isEmpty, let value else { return (found.0, found.1, nil) }
        return (found.0, found.1, bytes(of: value))
    }

    func delete(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> Bool {
        try perform(timeout: timeout) { call throws(SecureDictionaryError) in
            try Self.matchingPaths(call, item) { paths, _, _ throws(SecureDictionaryError) in
                for path in paths {
                    // KeePassXC returns a prompt from every Item.Delete.
                    try Self.confirming(call) { () throws(SecureDictionaryError) in
                        var error: UnsafeMutablePointer<GError>?
                        if secret_service_delete_item_dbus_path_sync(call.service, path, call.cancellable.pointer, &error) == 0 {
                            throw KeyringErrorMapping.map(error)
                        }
                    }
                }
                return !paths.isEmpty
            }
        }
    }

    /// Shows the provider's unlock dialog for the collection behind `alias`, when it is
    /// locked, and waits for the user up to `timeout`.
    ///
    /// At `timeout` the prompt is dismissed (`Prompt.Dismiss`), except on gnome-keyring:
    /// dismissing a shown unlock prompt aborts gnome-keyring-daemon 42.1 (an assertion in
    /// `gkd-secret-unlock.c`, unchanged upstream), so there the dialog stays until answered.
    ///
    /// - Throws: ``SecureDictionaryError/unlockDismissed`` when the user cancelled,
    ///   ``SecureDictionaryError/locked`` when nobody answered in time.
    func unlockInteractively(_ alias: KeyringCollection, timeout: Duration) throws(SecureDictionaryError) {
        do {
            try perform(timeout: timeout) { call throws(SecureDictionaryError) in
                let collection = try Self.collectionPath(call, alias)
                guard try Self.isLocked(call.service, collection: collection, call.cancellable) else { return }
                sd_service_set_dismiss_on_cancel(call.service, call.connection.provider.dismissesPromptsOnCancel ? 1 : 0)
                let unlocked = try Self.confirming(call) { () throws(SecureDictionaryError) -> Int in
                    try Self.unlock(call, paths: [collection])
                }
                if unlocked == 0 { throw .unlockDismissed }
            }
        } catch .confirmationDenied {
            throw .unlockDismissed  // the prompt completed as dismissed: the user said no
        } catch .confirmationRequired {
            throw .locked  // nobody answered in time
        }
    }

    /// Opens the service and describes it and the collection behind `alias` (no prompt, no change).
    func diagnose(_ alias: KeyringCollection, timeout: Duration) throws(SecureDictionaryError) -> SecretServiceDiagnosis {
        var diagnosis = try perform(timeout: timeout) { call throws(SecureDictionaryError) in
            var diagnosis = SecretServiceDiagnosis(
                providerName: call.connection.provider.name, sessionAlgorithm: call.connection.sessionAlgorithm)
            do throws(SecureDictionaryError) {
                let path = try Self.collectionPath(call, alias)
                diagnosis.collection = .init(
                    path: path, label: try Self.label(call, collection: path),
                    isLocked: try Self.isLocked(call.service, collection: path, call.cancellable))
            } catch .noSuchCollection {
                diagnosis.collection = nil
            }
            return diagnosis
        }
        let pid = sd_bus_name_owner_pid("org.freedesktop.secrets")
        diagnosis.providerPID = pid > 0 ? Int(pid) : nil
        return diagnosis
    }

    /// Runs `body` with the paths of the unlocked items matching `item` in its collection
    /// (unlocked first where no prompt is needed) and that collection's path.
    ///
    /// - Throws: ``SecureDictionaryError/locked`` when a matching item is locked, or when none
    ///   matches and the collection is locked: only an unlocked collection can say "no such
    ///   item".
    private static func matchingPaths<T>(
        _ call: Call, _ item: KeyringItem, readingLastPath: Bool = false,
        _ body: (_ paths: [String], _ collection: String, _ guessed: SecretBytes?) throws(SecureDictionaryError) -> T
    ) throws(SecureDictionaryError) -> T {
        let (service, cancellable) = (call.service, call.cancellable)
        let collection = try collectionPath(call, item.collection)
        return try unlockingWithoutPrompt(call, collection) { () throws(SecureDictionaryError) in
            let found = try accessibleItems(call, item, in: collection, readingLastPath: readingLastPath)
            if !found.locked.isEmpty { throw .locked }
            if found.unlocked.isEmpty, try isLocked(service, collection: collection, cancellable) { throw .locked }
            return try body(found.unlocked, collection, found.guessed)
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

    /// Runs `body` with the service allowed to run confirmation prompts (never unlock
    /// prompts): a prompt that needs no human completes at once; one that waits for a human
    /// is dismissed at the deadline (``SecureDictionaryError/confirmationRequired``).
    private static func confirming<T>(_ call: Call, _ body: () throws(SecureDictionaryError) -> T)
        throws(SecureDictionaryError) -> T
    {
        sd_service_allow_confirmations(call.service, 1)
        defer { sd_service_allow_confirmations(call.service, 0) }
        return try body()
    }

    // MARK: One function per libsecret call

    /// `secret_service_unlock_dbus_paths_sync` of a collection on the no-prompt service:
    /// whether it is unlocked now (`false` when unlocking would need a prompt).
    private static func unlockWithoutPrompt(_ call: Call, collection: String) throws(SecureDictionaryError) -> Bool {
        do {
            return try unlock(call, paths: [collection]) > 0
        } catch .locked {
            return false  // a prompt would have been needed
        }
    }

    /// `secret_service_unlock_dbus_paths_sync`: how many of `paths` are unlocked now. A
    /// prompt runs only inside ``confirming(_:_:)``; elsewhere one that is needed is `locked`.
    private static func unlock(_ call: Call, paths: [String]) throws(SecureDictionaryError) -> Int {
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

    /// The `Label` property of a collection.
    private static func label(_ call: Call, collection: String) throws(SecureDictionaryError) -> String {
        var error: UnsafeMutablePointer<GError>?
        guard let label = sd_collection_label(call.service, collection, call.cancellable.pointer, &error) else {
            throw KeyringErrorMapping.map(error)
        }
        defer { g_free(label) }
        return String(cString: label)
    }

    /// `secret_service_get_secret_for_dbus_path_sync`: a copy of the item's secret bytes.
    private static func secret(
        _ service: UnsafeMutablePointer<SecretService>, path: String, collection: String, _ cancellable: Cancellable
    ) throws(SecureDictionaryError) -> SecretBytes {
        var error: UnsafeMutablePointer<GError>?
        guard let value = secret_service_get_secret_for_dbus_path_sync(service, path, cancellable.pointer, &error) else {
            if error != nil { throw KeyringErrorMapping.map(error) }
            // No secret and no error: the item was locked since the search, or libsecret could
            // not decrypt what arrived (the two ends of the session derived different keys).
            if try isLocked(service, collection: collection, cancellable) { throw .locked }
            throw .sessionRejected(reason: "a secret arrived that the session could not decrypt")
        }
        defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
        return bytes(of: value)
    }

    /// A copy of a secret value's bytes.
    private static func bytes(of value: OpaquePointer) -> SecretBytes {
        var length = 0
        guard let bytes = sd_value_bytes(value, &length), length > 0 else {
            return SecretBytes(copying: UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return SecretBytes(copying: UnsafeRawBufferPointer(start: bytes, count: length))
    }

    /// `secret_service_create_item_dbus_path_sync` with `SECRET_ITEM_CREATE_REPLACE` (should
    /// another process have created the item since the lookup), confirmations allowed.
    @discardableResult
    private static func create(
        _ call: Call, _ secret: SecretBytes, item: KeyringItem, in collection: String, handingOn lock: BusNameWriterLock?
    ) throws(SecureDictionaryError) -> String {
        let table = sd_attributes_new(item.name, item.applicationID, item.dictionaryName, KeyringItem.schemaName)
        let properties = sd_item_properties_new(item.name, table)
        g_hash_table_unref(table)
        defer { g_hash_table_unref(properties) }
        if let lock { return try createHandingOn(lock, call, secret, properties: properties, in: collection) }
        var created = ""
        try withBorrowedValue(secret) { value throws(SecureDictionaryError) in
            try confirming(call) { () throws(SecureDictionaryError) in
                var error: UnsafeMutablePointer<GError>?
                guard
                    let path = secret_service_create_item_dbus_path_sync(
                        call.service, collection, properties, value, SECRET_ITEM_CREATE_REPLACE, call.cancellable.pointer,
                        &error)
                else {
                    throw KeyringErrorMapping.map(error)
                }
                created = String(cString: path)
                g_free(path)
            }
        }
        return created
    }

    /// `CreateItem` with replace, sent by the shim, which gives the writer lock's name back
    /// right after it when the lock's connection is the service's (``BusNameWriterLock``
    /// rule 5); returns the item's path.
    ///
    /// - Throws: ``SecureDictionaryError/confirmationRequired`` when the provider answers with
    ///   a prompt: the item is then not written (the prompt is not run; it is dismissed where
    ///   the provider takes that well).
    private static func createHandingOn(
        _ lock: BusNameWriterLock, _ call: Call, _ secret: SecretBytes, properties: OpaquePointer?, in collection: String
    ) throws(SecureDictionaryError) -> String {
        var created = ""
        try withBorrowedValue(secret) { value throws(SecureDictionaryError) in
            let pending = try lock.sendHandingOn(unless: call.cancellable) { held, name, handed throws(SecureDictionaryError) in
                var error: UnsafeMutablePointer<GError>?
                guard
                    let pending = sd_collection_create_item_send(
                        call.service, collection, properties, value, held, name, &handed, call.cancellable.pointer, &error)
                else { throw KeyringErrorMapping.map(error) }
                return pending
            }
            var error: UnsafeMutablePointer<GError>?
            var path: UnsafeMutablePointer<gchar>?
            var prompt: UnsafeMutablePointer<gchar>?
            defer {
                g_free(path)
                g_free(prompt)
            }
            guard sd_collection_create_item_finish(pending, &path, &prompt, &error) != 0, let path, let prompt else {
                throw KeyringErrorMapping.map(error)
            }
            guard String(cString: prompt) == "/" else {
                if call.connection.provider.dismissesPromptsOnCancel { sd_prompt_dismiss(call.service, prompt, 1_000) }
                throw .confirmationRequired
            }
            created = String(cString: path)
        }
        return created
    }

    /// `Item.SetSecret` on the item at `path` (see `sd_item_set_secret`).
    private static func setSecret(_ call: Call, _ secret: SecretBytes, path: String) throws(SecureDictionaryError) {
        try withBorrowedValue(secret) { value throws(SecureDictionaryError) in
            var error: UnsafeMutablePointer<GError>?
            if sd_item_set_secret(call.service, path, value, call.cancellable.pointer, &error) == 0 {
                throw KeyringErrorMapping.map(error)
            }
        }
    }

    /// Runs `body` with a SecretValue that borrows `secret`'s bytes (no copy): they outlive
    /// it, since libsecret encrypts them during the call and the value is released before
    /// `secret` is.
    private static func withBorrowedValue(
        _ secret: SecretBytes, _ body: (OpaquePointer?) throws(SecureDictionaryError) -> Void
    ) throws(SecureDictionaryError) {
        try secret.withUnsafeBytes { bytes throws(SecureDictionaryError) in
            let value = sd_value_new_borrowing(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
            defer { secret_value_unref(UnsafeMutableRawPointer(value)) }
            try body(value)
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
        case .connectionLost, .sessionRejected, .writeNotVerified: true
        case .keyring(let domain, let code, _):
            domain == "g-io-error-quark" && code == Int(G_IO_ERROR_DBUS_ERROR.rawValue)
        default: false
        }
    }

    /// Whether the connection that produced this error can still be used.
    fileprivate var keepsConnection: Bool {
        switch self {
        case .locked, .ambiguous, .tooLarge, .invalidName, .invalidValue, .corrupt, .unlockDismissed: true
        default: false
        }
    }
}
