extension SecureDictionary {
    /// The value for `key`, refreshed first when the stored entries are stale: once, whoever
    /// asks, in this process or another.
    ///
    /// ```swift
    /// let token = try tokens.value(forKey: "accessToken", refreshingIf: { entries in
    ///     entries[.expiresAt] < Date().addingTimeInterval(60)
    /// }, refresh: { entries in
    ///     let pair = try server.refresh(entries[.refreshToken])   // the lock is held meanwhile
    ///     try entries.set(pair.access, for: .accessToken)
    ///     try entries.set(pair.refresh, for: .refreshToken)
    ///     try entries.set(pair.expires, for: .expiresAt)
    /// })
    /// ```
    ///
    /// Fresh entries in memory (as `isStale` judges) answer with no keyring call. Otherwise the
    /// call takes the item's writer lock, the one every writer of the item takes in every
    /// process (the Secret Service's bus name, the file stores' lock file; for a store without
    /// one, this process's lock only), reads what is stored and asks `isStale` again: if another
    /// caller refreshed meanwhile, its value is returned without calling `refresh`. Else
    /// `refresh` runs holding the lock, and its changes are written in one write onto what is
    /// stored then (checked again, so a tool that takes no lock keeps its change). So two
    /// processes never spend one refresh token.
    ///
    /// A killed refresher frees the lock at once (the bus name goes with the process, the lock
    /// file's lock with its descriptor); a hung one holds it, and the others give up after
    /// `lockWait`. Other writers of the item (`update { }`, `setValue`) wait for the refresh
    /// too, up to their ``Options/timeout``; writers of other items never do, on any store.
    ///
    /// - Parameters:
    ///   - key: The key whose value is returned.
    ///   - lockWait: How long to wait for another caller's refresh (30 s by default; give
    ///     `refresh`'s network call a shorter timeout, so that waiters outlast a slow refresh
    ///     that succeeds). `.zero` does not wait: a held lock is at once
    ///     ``SecureDictionaryError/lockHeld(pid:command:)``. Each keyring call (the check, the
    ///     write, asking the bus who holds the lock) has ``Options/timeout`` of its own besides.
    ///   - isStale: Whether the entries need a refresh: an expiry passed, a token missing. It
    ///     may run twice (on the entries in memory, then on those read under the lock).
    ///   - refresh: Fetches new values and sets them in the entries it is given. It runs
    ///     holding the item's locks: like `isStale`, it must not use this dictionary (or
    ///     another instance of the same item), which would wait for itself.
    /// - Returns: The value for `key`, as refreshed or as found fresh.
    /// - Throws: What `isStale` or `refresh` throws (nothing is written then);
    ///   ``SecureDictionaryError/lockHeld(pid:command:)`` when another caller (maybe of this
    ///   process) held the lock for all of `lockWait`; a load's or a write's errors, as
    ///   ``setValue(_:forKey:)-(SecureDictionary.Value?,_)`` (what `refresh` fetched is then lost).
    public func value(
        forKey key: String,
        lockWait: Duration = .seconds(30),
        refreshingIf isStale: (Entries) throws -> Bool,
        refresh: (inout Entries) throws -> Void
    ) throws -> Value? {
        let (current, queue) = try RefreshSteps.current(self)
        if try !isStale(current) { return current[key] }
        let steps = RefreshSteps(dictionary: self, lockWait: lockWait)
        try steps.entered(queue.enter(until: steps.deadline) ? .entered : .timedOut, queue)
        let held = try steps.hold(queue)
        var entries = held.entries
        do {
            guard try isStale(entries) else { return steps.fresh(entries[key], held) }
            try refresh(&entries)
        } catch {
            held.release()
            throw error
        }
        return try steps.commit(entries, key, held)
    }
}

extension SecureDictionary.Async {
    /// The async form of ``SecureDictionary/value(forKey:lockWait:refreshingIf:refresh:)``,
    /// whose `refresh` may await.
    ///
    /// ```swift
    /// let token = try await tokens.async.value(forKey: "accessToken", refreshingIf: { entries in
    ///     entries[.expiresAt] < Date().addingTimeInterval(60)
    /// }, refresh: { entries in entries[.accessToken] = try await server.refresh(entries[.refreshToken]) })
    /// ```
    ///
    /// It differs from the sync form in how it waits: a caller waiting for another caller's
    /// refresh in this process suspends, holding no thread (only the next in line waits for the
    /// locks, on the queue of ``SecureDictionary/Async``); `refresh` runs on the caller's
    /// executor. Cancelling the task ends a wait at once, as for every async call.
    ///
    /// - Throws: as the sync form, and ``SecureDictionaryError/cancelled``.
    public func value(
        forKey key: String,
        lockWait: Duration = .seconds(30),
        refreshingIf isStale: (SecureDictionary.Entries) throws -> Bool,
        refresh: (inout SecureDictionary.Entries) async throws -> Void
    ) async throws -> SecureDictionary.Value? {
        let (current, queue) = try await Offload.run { () throws(SecureDictionaryError) in
            try RefreshSteps.current(dictionary)
        }
        if try !isStale(current) { return current[key] }
        let steps = RefreshSteps(dictionary: dictionary, lockWait: lockWait)
        try steps.entered(await queue.enter(until: steps.deadline), queue)
        // Cancelled while the locks are being taken, the wait ends; the locks and the queue,
        // once taken, are given back as the HeldWrite nobody received goes.
        let held = try await Offload.run { () throws(SecureDictionaryError) in try steps.hold(queue) }
        var entries = held.entries
        do {
            guard try isStale(entries) else { return steps.fresh(entries[key], held) }
            try await refresh(&entries)
        } catch {
            held.release()
            throw error
        }
        // The write and the release together, on the queue: a cancelled wait for the write
        // never gives the locks back before the write is answered.
        let changed = entries
        return try await Offload.run { () throws(SecureDictionaryError) in try steps.commit(changed, key, held) }
    }
}

/// The steps of one token refresh, the same for the sync and the async form, which differ
/// only in how they wait (the async form for the item's ``LockQueue``, as its doc says).
/// A refresh is the item's queue and a ``HeldWrite``; the held write owns the queue once
/// made, and is released once, by ``fresh(_:_:)``, ``commit(_:_:_:)`` or the caller's throw.
private struct RefreshSteps: Sendable {
    let dictionary: SecureDictionary
    let lockWait: Duration
    /// The end of the wait for another caller's refresh, in this process or another.
    let deadline: Deadline

    init(dictionary: SecureDictionary, lockWait: Duration) {
        self.dictionary = dictionary
        self.lockWait = lockWait
        deadline = Deadline(after: lockWait)
    }

    /// The entries in memory (loaded first when needed), and the item's queue.
    static func current(_ dictionary: SecureDictionary) throws(SecureDictionaryError)
        -> (SecureDictionary.Entries, LockQueue)
    {
        let entries = try dictionary.currentEntries()
        return (entries, try dictionary.state.queue(until: Deadline(after: dictionary.options.timeout)))
    }

    /// Returns when the wait for `queue` ended with the queue entered; else throws why it ended.
    func entered(_ outcome: LockQueue.Outcome, _ queue: LockQueue) throws(SecureDictionaryError) {
        switch outcome {
        case .entered: return
        case .timedOut: throw queue.endedWait
        case .cancelled: throw .cancelled
        }
    }

    /// The item's locks behind `queue` (entered), held with the stored item checked; when the
    /// keyring is locked or asks to confirm the access and ``SecureDictionary/Options/unlock``
    /// allows its dialog, after the dialog (then queued again, with a new `lockWait`).
    func hold(_ queue: LockQueue) throws(SecureDictionaryError) -> HeldWrite {
        let (state, context) = (dictionary.state, dictionary.options.context)
        do {
            return try HeldWrite(state, context, holding: queue, until: deadline)
        } catch let error where error.asksTheUser && context.unlock != .never {
            try state.askTheUser(after: error, context)
            let again = Deadline(after: lockWait)
            return try HeldWrite(state, context, holding: try state.enterQueue(until: again), until: again)
        }
    }

    /// `value`, found fresh under the locks: another caller refreshed meanwhile.
    func fresh(_ value: SecureDictionary.Value?, _ held: HeldWrite) -> SecureDictionary.Value? {
        held.release()
        return value
    }

    /// Writes `entries`' changes and gives the locks back; the value for `key` written.
    func commit(_ entries: SecureDictionary.Entries, _ key: String, _ held: HeldWrite) throws(SecureDictionaryError)
        -> SecureDictionary.Value?
    {
        defer { held.release() }
        return try held.commit(entries).value(forKey: key)
    }
}
