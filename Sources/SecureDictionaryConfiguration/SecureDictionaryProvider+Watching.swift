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
    /// Fed by `SecureDictionary.changes(forKey:)` of the entry the key names and of each
    /// leading part of it: a change to any other entry neither wakes the watch nor is decoded
    /// for it. Each element is a `Result`: a value stored as another type is a
    /// `SecureDictionaryError.typeMismatch(expected:found:)` failure. The watch ends when
    /// `updatesHandler` returns. The rest (a value twice, a failed reload): <doc:SecureDictionaryConfiguration>.
    ///
    /// - Throws: what `updatesHandler` throws.
    public func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey,
        type: ConfigType,
        updatesHandler: (_ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>) async throws -> Return
    ) async throws -> Return {
        try await watch(
            dictionary.changes(forKeys: EntryLookup.entryNames(for: key.components)),
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
    /// Fed by `SecureDictionary.changes()`: a change of several entries at once may give the
    /// same snapshot more than once. Each snapshot is as ``snapshot()`` makes it.
    ///
    /// - Throws: what `updatesHandler` throws.
    public func watchSnapshot<Return: ~Copyable>(
        updatesHandler: (_ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>) async throws -> Return
    ) async throws -> Return {
        try await watch(
            dictionary.changes(), current: { [self] in snapshot() }, updatesHandler: updatesHandler)
    }

    /// Runs `updatesHandler` over `current()` now and after each element of `changes`, until
    /// `updatesHandler` returns. `changes` is made before the first `current()`, so that no
    /// change falls in between.
    private func watch<Element: Sendable, Return: ~Copyable>(
        _ changes: AsyncStream<SecureDictionary.Change>,
        current: @escaping @Sendable () -> Element,
        updatesHandler: (ConfigUpdatesAsyncSequence<Element, Never>) async throws -> Return
    ) async throws -> Return {
        // Only the newest element waits for a slow reader: an older one is out of date.
        let (updates, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.yield(current())
        let feed = Task {
            for await _ in changes { continuation.yield(current()) }
        }
        defer {
            feed.cancel()  // ends `changes`, and the dictionary's watch of the keyring with the last one
            continuation.finish()
        }
        return try await updatesHandler(ConfigUpdatesAsyncSequence(updates))
    }
}
