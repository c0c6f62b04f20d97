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
    /// When `isStale` finds the entries in memory fresh, their value is returned with no
    /// keyring call. Otherwise the call waits for the item's writer lock, the one every writer
    /// of the item takes in every process (the session bus name of the Secret Service, the
    /// item's lock file of the encrypted-file stores; for a store without one, this process's
    /// lock only), reads what is stored and asks `isStale` again: when another caller refreshed
    /// meanwhile, its value is returned and `refresh` is not called. Else `refresh` runs,
    /// holding the lock; every change it makes to the entries is written in one write, onto
    /// what is stored then (checked again, so a tool that does not take the lock keeps its
    /// change), and the lock is given back. So two processes never spend one refresh token.
    ///
    /// A process killed while it refreshes frees the lock at once (the bus name goes with the
    /// process, the lock file's lock with its file descriptor); one that hangs holds it, and
    /// the others give up after `lockWait`. Other writers of the item, `update { }` and
    /// `setValue` included, wait for the refresh too, up to their ``Options/timeout``; the
    /// writers of other items never wait for it, on any store.
    ///
    /// - Parameters:
    ///   - key: The key whose value is returned.
    ///   - lockWait: How long to wait for another caller's refresh: 30 seconds by default.
    ///     `.zero` tries once and does not wait: a free lock is taken, a held one is
    ///     ``SecureDictionaryError/lockHeld(pid:command:)`` at once (asking the bus who holds
    ///     it is a keyring call, with ``Options/timeout``).
    ///     Give `refresh`'s network call a timeout shorter than this, so that waiters outlast
    ///     a slow refresh that succeeds. Each keyring call (the check, the write) has
    ///     ``Options/timeout`` of its own besides.
    ///   - isStale: Whether the entries need a refresh: an expiry passed, a token missing. It
    ///     may run twice (on the entries in memory, then on those read under the lock).
    ///   - refresh: Fetches new values and sets them in the entries it is given. It runs
    ///     holding the item's locks: like `isStale`, it must not use this dictionary (or
    ///     another instance of the same item), which would wait for itself.
    /// - Returns: The value for `key`, as refreshed or as found fresh.
    /// - Throws: What `isStale` or `refresh` throws; nothing is written then.
    ///   ``SecureDictionaryError/lockHeld(pid:command:)`` when another caller held the lock
    ///   for all of `lockWait`: it names the process (this one, when one of its own calls
    ///   refreshes). The errors of a load or a write, as
    ///   ``setValue(_:forKey:)-(SecureDictionary.Value?,_)``: after a write that failed, what
    ///   `refresh` fetched is lost.
    public func value(
        forKey key: String,
        lockWait: Duration = .seconds(30),
        refreshingIf isStale: (Entries) throws -> Bool,
        refresh: (inout Entries) throws -> Void
    ) throws -> Value? {
        let current = Entries(stored: try state.generation(options.context))
        if try !isStale(current) { return current[key] }
        let deadline = Deadline(after: lockWait)
        guard state.refreshGate.enterWaiting(until: deadline) else { throw RefreshGate.heldHere }
        defer { state.refreshGate.leave() }
        let held = try holdLocks(until: deadline, lockWait: lockWait)
        defer { held.release() }
        var entries = held.entries
        guard try isStale(entries) else { return entries[key] }
        try refresh(&entries)
        return try held.commit(entries).value(forKey: key)
    }

    /// The item's locks, held with the stored item checked; when the keyring is locked or
    /// asks to confirm the access and ``Options/unlock`` allows its dialog, after the dialog
    /// (then with a new `lockWait`).
    fileprivate func holdLocks(until deadline: Deadline, lockWait: Duration) throws(SecureDictionaryError) -> HeldWrite {
        let context = options.context
        do {
            return try HeldWrite(state, context, until: deadline)
        } catch let error where error.asksTheUser && context.unlock != .never {
            try state.askTheUser(after: error, context)
            return try HeldWrite(state, context, until: Deadline(after: lockWait))
        }
    }
}

extension SecureDictionary.Async {
    /// The value for `key`, refreshed first when the stored entries are stale: once, whoever
    /// asks, in this process or another. See
    /// ``SecureDictionary/value(forKey:lockWait:refreshingIf:refresh:)``.
    ///
    /// ```swift
    /// let token = try await tokens.async.value(forKey: "accessToken", refreshingIf: { entries in
    ///     entries[.expiresAt] < Date().addingTimeInterval(60)
    /// }, refresh: { entries in
    ///     let pair = try await server.refresh(entries[.refreshToken])   // the lock is held meanwhile
    ///     try entries.set(pair.access, for: .accessToken)
    ///     try entries.set(pair.refresh, for: .refreshToken)
    ///     try entries.set(pair.expires, for: .expiresAt)
    /// })
    /// ```
    ///
    /// A caller waiting for another caller's refresh in this process suspends, holding no
    /// thread; only the next in line waits for the locks, on the private queue of the async
    /// calls. `refresh` runs on the caller's executor, the keyring calls on that queue.
    /// Cancelling the task ends a wait at once with ``SecureDictionaryError/cancelled``;
    /// during the write, as for every async write, the outcome is then unknown.
    ///
    /// - Throws: What `isStale` or `refresh` throws; nothing is written then.
    ///   ``SecureDictionaryError/lockHeld(pid:command:)`` after `lockWait`;
    ///   ``SecureDictionaryError/cancelled``; the errors of a load or a write.
    public func value(
        forKey key: String,
        lockWait: Duration = .seconds(30),
        refreshingIf isStale: (SecureDictionary.Entries) throws -> Bool,
        refresh: (inout SecureDictionary.Entries) async throws -> Void
    ) async throws -> SecureDictionary.Value? {
        let dictionary = dictionary
        let (state, context) = (dictionary.state, dictionary.options.context)
        let current = try await Offload.run { () throws(SecureDictionaryError) in
            SecureDictionary.Entries(stored: try state.generation(context))
        }
        if try !isStale(current) { return current[key] }
        let deadline = Deadline(after: lockWait)
        switch await state.refreshGate.enter(until: deadline) {
        case .entered: break
        case .timedOut: throw RefreshGate.heldHere
        case .cancelled: throw SecureDictionaryError.cancelled
        }
        defer { state.refreshGate.leave() }
        // Cancelled while the locks are being taken, the wait ends; the locks, once taken,
        // are given back as the HeldWrite nobody received goes.
        let held = try await Offload.run { () throws(SecureDictionaryError) in
            try dictionary.holdLocks(until: deadline, lockWait: lockWait)
        }
        var entries = held.entries
        do {
            guard try isStale(entries) else {
                held.release()
                return entries[key]
            }
            try await refresh(&entries)
        } catch {
            held.release()
            throw error
        }
        // The write and the release together, on the queue: a cancelled wait for the write
        // never gives the locks back before the write is answered.
        let changed = entries
        return try await Offload.run { () throws(SecureDictionaryError) in
            defer { held.release() }
            return try held.commit(changed).value(forKey: key)
        }
    }
}
