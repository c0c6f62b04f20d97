extension LibSecretClient {
    /// Writes `secret` to `item`. When a try on a session not yet proven may have stored
    /// garbage and no later try stored `secret` faithfully, puts back what the item held.
    ///
    /// - Throws: ``SecureDictionaryError/writeNotVerified(restored:)`` when every try read
    ///   back other bytes than written, or when the keyring stored a try that neither a
    ///   read-back confirmed nor a restore undid; otherwise the last try's error.
    func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        let deadline = Deadline(after: timeout)
        let attempt = VerifiedWrite()
        do {
            try send(secret, to: item, timeout: timeout, attempt: attempt)
        } catch {
            guard attempt.mayHaveDamaged else { throw error }
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
                try send(bytes, to: item, timeout: deadline.remaining, attempt: nil)
                return true
            }
        } catch {
            return false
        }
    }

    /// ``write(_:_:to:in:attempt:)`` in `item`'s collection, as one ``perform(timeout:writes:explainsSandbox:_:)``.
    private func send(_ secret: SecretBytes, to item: KeyringItem, timeout: Duration, attempt: VerifiedWrite?)
        throws(SecureDictionaryError)
    {
        try perform(timeout: timeout, writes: true) { [self] call throws(SecureDictionaryError) in
            let collection = try SecretServiceCalls.collectionPath(call, item.collection)
            try Self.unlockingWithoutPrompt(call, collection) { () throws(SecureDictionaryError) in
                try write(call, secret, to: item, in: collection, attempt: attempt)
            }
        }
    }

    /// Sends `secret` to `item` and, until this session has proven itself, reads it back.
    /// Before the first bytes of `attempt` leave, records in it what the item held.
    ///
    /// - Throws: ``SecureDictionaryError/writeNotVerified(restored:)`` when the bytes read
    ///   back differ from `secret` (the caller's retry then uses a new session).
    private func write(
        _ call: Call, _ secret: SecretBytes, to item: KeyringItem, in collection: String, attempt: VerifiedWrite?
    ) throws(SecureDictionaryError) {
        let verifying = !call.connection.sessionVerified
        // Where the check before this write found the item (`nil`: no such item, or no check on this session).
        var found = call.connection.takePath(of: item, in: collection)
        var searchedJustNow = false
        if verifying, let attempt, attempt.needsPrior {
            // "No such item" from an earlier check may be stale: removing an item another
            // process created since would be worse than one more search.
            if found == nil {
                found = try Self.existingPath(call, item, in: collection)
                searchedJustNow = true
            }
            if let path = found {
                attempt.record(.bytes(try SecretServiceCalls.secret(call, path: path, collection: collection)))
            } else {
                attempt.record(.absent)
            }
        }
        let sent = mangled(secret)
        attempt?.sending(onVerifiedSession: !verifying)
        let path = try Self.put(call, sent, item: item, in: collection, knownPath: found, searchedJustNow: searchedJustNow)
        guard verifying else { return }
        attempt?.stored()
        #if ENABLE_TESTING_HOOKS
            beforeReadBack?()
        #endif
        // A session whose ends derived different keys stores garbage about once in 256
        // writes and fails to decrypt almost every read: one exact read-back proves the keys
        // match, for every later write on this session.
        let stored = try SecretServiceCalls.secret(call, path: path, collection: collection)
        guard stored.holdsSameBytes(as: secret) else {
            attempt?.readBackDiffers()
            throw .writeNotVerified(restored: false)
        }
        attempt?.readBackMatches()
        call.connection.sessionVerified = true
    }

    /// Stores `secret` as `item` and returns its path: `CreateItem` replacing any item of the
    /// same attributes, or, where ``ProviderTraits/replacesSecretInPlace``, `Item.SetSecret` on
    /// the existing item at `knownPath` (from the check before every write), else found now.
    private static func put(
        _ call: Call, _ secret: SecretBytes, item: KeyringItem, in collection: String, knownPath: String?,
        searchedJustNow: Bool
    ) throws(SecureDictionaryError) -> String {
        if call.connection.provider(call.cancellable).replacesSecretInPlace {
            // A known path is used as is (a stale one fails, and is looked up again); "no such
            // item" is checked once more (unless just now): a CreateItem that meets an item
            // another process created meanwhile would ask the user (one search per item's life).
            var path = knownPath
            if path == nil && !searchedJustNow { path = try existingPath(call, item, in: collection) }
            if let known = path {
                do {
                    try SecretServiceCalls.setSecret(call, secret, path: known)
                    return known
                } catch .connectionLost {
                    // Removed since the check (NoSuchObject or UnknownObject): look again before creating.
                    if let found = try existingPath(call, item, in: collection) {
                        try SecretServiceCalls.setSecret(call, secret, path: found)
                        return found
                    }
                }
            }
        }
        return try SecretServiceCalls.createItem(call, secret, label: item.name, attributes: item.attributes, in: collection)
    }

    // MARK: Test hooks (compiled only with ENABLE_TESTING_HOOKS: debug builds)

    /// Whether a test makes this client's writes or reads go wrong on purpose.
    var manglesSecrets: Bool {
        #if ENABLE_TESTING_HOOKS
            fault != nil
        #else
            false
        #endif
    }

    /// `secret`, or, when a test says so, other bytes, as a provider that mangles secrets sends.
    private func mangled(_ secret: SecretBytes) -> SecretBytes {
        #if ENABLE_TESTING_HOOKS
            if fault?.takeWrite() == true { return ManglingFault.mangled(secret) }
        #endif
        return secret
    }

    /// `secret` as read, or, when a test says so, what a session with the wrong key decrypts.
    func garbled(_ secret: SecretBytes) -> SecretBytes {
        #if ENABLE_TESTING_HOOKS
            if fault?.takeRead() == true { return ManglingFault.garbled(secret) }
        #endif
        return secret
    }
}
