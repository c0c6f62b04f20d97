public import Configuration
import SecureDictionary

extension SecureDictionaryProvider {
    /// The value `key` names now, then again after each change to an entry that can change
    /// it, whoever made the change (this process, another process, another tool).
    ///
    /// ```swift
    /// try await provider.watchValue(forKey: ["api", "token"], type: .string) { updates in
    ///     for await update in updates { client.token = try update.get().value }
    /// }
    /// ```
    ///
    /// Fed by `SecureDictionary.changes()`: the change is in the dictionary's memory before it
    /// arrives here, and the same value may come twice. A change can come only from an entry
    /// named by the key or by a leading part of it (a dictionary stored there). Each element
    /// is a `Result`: a value stored as another type is a
    /// `SecureDictionaryError.typeMismatch(expected:found:)` failure. A reload after
    /// another process's change that fails (the keyring was locked meanwhile) goes to the
    /// dictionary's `Options.failureHandler` and gives no element.
    /// The watch ends when `updatesHandler` returns.
    ///
    /// - Throws: what `updatesHandler` throws.
    public func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey,
        type: ConfigType,
        updatesHandler: (_ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>) async throws -> Return
    ) async throws -> Return {
        let names = EntryLookup.entryNames(for: key.components)
        return try await watch(
            changesTo: { names.contains($0) },
            current: { [self] in Result { () throws(SecureDictionaryError) in try value(forKey: key, type: type) } },
            updatesHandler: updatesHandler)
    }

    /// The dictionary's entries now, then again after each change, whoever made it.
    ///
    /// ```swift
    /// try await provider.watchSnapshot { snapshots in
    ///     for await snapshot in snapshots {
    ///         pool.password = try snapshot.value(forKey: ["database", "password"], type: .string).value
    ///     }
    /// }
    /// ```
    ///
    /// Fed by `SecureDictionary.changes()`, as ``watchValue(forKey:type:updatesHandler:)``:
    /// one snapshot per changed entry, so a change of several entries at once may give the
    /// same snapshot more than once.
    ///
    /// - Throws: what `updatesHandler` throws.
    public func watchSnapshot<Return: ~Copyable>(
        updatesHandler: (_ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>) async throws -> Return
    ) async throws -> Return {
        try await watch(
            changesTo: { _ in true }, current: { [self] in currentSnapshot() as any ConfigSnapshot },
            updatesHandler: updatesHandler)
    }

    /// Runs `updatesHandler` over `current()` now and after each change to an entry whose name
    /// `isWatched` accepts, until `updatesHandler` returns.
    private func watch<Element: Sendable, Return: ~Copyable>(
        changesTo isWatched: @escaping @Sendable (String) -> Bool,
        current: @escaping @Sendable () -> Element,
        updatesHandler: (ConfigUpdatesAsyncSequence<Element, Never>) async throws -> Return
    ) async throws -> Return {
        // Only the newest element waits for a slow reader: an older one is out of date.
        let (updates, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(1))
        // Listening starts before the first read, so that no change falls in between.
        let changes = dictionary.changes()
        continuation.yield(current())
        let feed = Task {
            for await change in changes where isWatched(change.key) { continuation.yield(current()) }
        }
        defer {
            feed.cancel()  // ends `changes`, and the dictionary's watch of the keyring with the last one
            continuation.finish()
        }
        return try await updatesHandler(ConfigUpdatesAsyncSequence(updates))
    }
}
