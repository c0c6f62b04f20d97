extension SecureDictionary {
    /// Waits until the keyring holding this dictionary is unlocked, whoever unlocks it (the
    /// user in a keyring manager, another app's prompt, a login), then loads the dictionary.
    ///
    /// ```swift
    /// do {
    ///     try settings.reload()
    /// } catch .locked {
    ///     banner.show("Waiting for your keyring to be unlocked…")
    ///     try await settings.waitUntilUnlocked()
    ///     banner.hide()
    /// }
    /// ```
    ///
    /// It shows no prompt. It listens to the Secret Service's own signals (`CollectionChanged`,
    /// `PropertiesChanged`), so it returns right after an unlock, and also looks again every
    /// `interval` for providers that do not announce one.
    ///
    /// - Throws: ``SecureDictionaryError/cancelled`` when the task is cancelled; any load error
    ///   other than ``SecureDictionaryError/locked``.
    public func waitUntilUnlocked(checkingEvery interval: Duration = .seconds(2)) async throws(SecureDictionaryError) {
        try await UnlockWaiter.wait(store: options.store, checkingEvery: interval) { () throws(SecureDictionaryError) in
            try self.reload()
        }
    }
}

extension SecureDictionary.Async {
    /// Opens a dictionary, waiting first until its keyring is unlocked if it is locked (see
    /// ``SecureDictionary/waitUntilUnlocked(checkingEvery:)``).
    ///
    /// ```swift
    /// let settings = try await SecureDictionary.Async.openWhenUnlocked(name: "settings")
    /// ```
    ///
    /// - Throws: ``SecureDictionaryError/cancelled`` when the task is cancelled; any error of
    ///   ``SecureDictionary/init(name:applicationID:options:)`` other than
    ///   ``SecureDictionaryError/locked``.
    public static func openWhenUnlocked(
        name: String? = nil,
        applicationID: String = SecureDictionary.defaultApplicationID,
        options: SecureDictionary.Options = SecureDictionary.Options(),
        checkingEvery interval: Duration = .seconds(2)
    ) async throws(SecureDictionaryError) -> SecureDictionary {
        try await UnlockWaiter.wait(store: options.store, checkingEvery: interval) { () throws(SecureDictionaryError) in
            try SecureDictionary(name: name, applicationID: applicationID, options: options)
        }
    }
}

/// Retries an operation that found the keyring locked, each time the keyring announces a
/// changed collection, and every `interval` besides.
enum UnlockWaiter {
    static func wait<T: Sendable>(
        store: any KeyringStore, checkingEvery interval: Duration,
        _ attempt: @escaping @Sendable () throws(SecureDictionaryError) -> T
    ) async throws(SecureDictionaryError) -> T {
        // Listen before the first attempt, so an unlock right after it is not missed.
        let (wakeUps, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let watch = (store as? any CoordinatedStore)?.watchChanges { change in
            if change == .collections { continuation.yield() }
        }
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                continuation.yield()
            }
        }
        defer {
            ticker.cancel()
            watch?.stop()
            continuation.finish()
        }
        var next = wakeUps.makeAsyncIterator()
        while true {
            do {
                return try await Offload.run(attempt)
            } catch .locked {
                // Wait below.
            }
            guard await next.next() != nil, !Task.isCancelled else { throw .cancelled }
        }
    }
}
