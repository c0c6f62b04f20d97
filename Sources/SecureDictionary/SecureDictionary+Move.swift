import Logging

extension SecureDictionary {
    /// Moves a dictionary from one store to another, verified: the copy is read back and
    /// compared byte for byte before the source is removed.
    ///
    /// ```swift
    /// // A Flatpak app moving to the Secret portal while it may still reach the keyring:
    /// let moved = try SecureDictionary.move(
    ///     name: "settings", applicationID: "org.example.App",
    ///     from: SecretServiceStore.shared, to: EncryptedFileStore.secretPortal)  // SecureDictionaryFileStore
    /// ```
    ///
    /// Returns `false`, changing nothing, when the source has no such dictionary. The source's
    /// bytes are validated as hostile input before anything is written, so a damaged dictionary
    /// is never copied; a destination that holds the same bytes already (an earlier move that
    /// stopped before the removal) completes the move. The source's writer lock is held from
    /// the first read to the removal and the destination's around the copy, so every
    /// SecureDictionary write, in any process, lands before the move (and is copied) or after
    /// it (in a new source item). A tool that takes no lock may still change the source: the
    /// copy is made again (up to three times), so that what is removed is what was copied; only
    /// its write between the last check and the removal can be lost. Open dictionaries of
    /// either store keep their caches: open them again afterwards.
    ///
    /// - Throws: what either store throws (``SecureDictionaryError/locked``, ``SecureDictionaryError/store(_:)``…);
    ///   ``SecureDictionaryError/corrupt(reason:)`` for a source that does not decode;
    ///   ``SecureDictionaryError/alreadyExists(name:)``, ``SecureDictionaryError/sourceChanged(name:)``,
    ///   ``SecureDictionaryError/sameStore(name:)`` (an `AutomaticStore` counts as the store it
    ///   chooses); ``SecureDictionaryError/writeNotVerified(restored:)`` when the copy read back
    ///   otherwise (the source is kept); ``SecureDictionaryError/lockHeld(pid:command:)``.
    @discardableResult
    public static func move(
        name: String? = nil, applicationID: String = SecureDictionary.defaultApplicationID,
        collection: KeyringCollection = .default,
        from source: any KeyringStore, to destination: any KeyringStore,
        timeout: Duration = .seconds(10)
    ) throws(SecureDictionaryError) -> Bool {
        let item = try KeyringItem(dictionaryName: name, applicationID: applicationID, collection: collection)
        let deadline = Deadline(after: timeout)
        // An AutomaticStore not used yet chooses its place now, to be compared. In one place the
        // copy would be the source, then removed (or the second writer lock, being the first,
        // waited for until the deadline).
        for store in [source, destination] { _ = try (store as? any PlaceChoosingStore)?.choosePlace(until: deadline) }
        let places = [source, destination].map { ($0 as? any CoordinatedStore)?.place }
        guard source !== destination, places[0] == nil || places[0] != places[1] else { throw .sameStore(name: item.name) }
        // The two writer locks (the doc comment says why), always in this order (a file
        // store's own store() takes no lock, so move must).
        let logger = Logger(label: "SecureDictionary.move")
        let sourceLock = try (source as? any CoordinatedStore)?.writerLock(for: item, logger: logger).acquireQueued(
            until: deadline)
        defer { sourceLock?.release() }
        guard var bytes = try source.load(item, timeout: deadline.remainingForCall()) else { return false }
        var destinationLock: QueuedLock?
        defer { destinationLock?.release() }
        var copied = false
        for _ in 0..<3 {
            // Validated as hostile input; no value is made of it.
            _ = try bytes.withUnsafeBytes { blob throws(SecureDictionaryError) in
                try BinaryPropertyList.validate(blob, limits: PropertyListLimits(maximumSize: blob.count))
            }
            // Taken once the source decodes: a damaged source touches nothing of the destination.
            if destinationLock == nil, let lock = (destination as? any CoordinatedStore)?.writerLock(for: item, logger: logger) {
                destinationLock = try lock.acquireQueued(until: deadline)
            }
            try copy(bytes, of: item, to: destination, replacingOwnCopy: copied, deadline)
            copied = true
            // Only the bytes copied are removed: a writer that does not take the lock may have
            // changed the source meanwhile, and its change is then copied too.
            guard let now = try source.load(item, timeout: deadline.remainingForCall()) else {
                return true  // removed from the source meanwhile: the copy is what it held last
            }
            if now.holdsSameBytes(as: bytes) {
                _ = try source.delete(item, timeout: deadline.remainingForCall())
                return true
            }
            bytes = now
        }
        throw .sourceChanged(name: item.name)
    }

    /// Writes `bytes` to `destination` and reads them back. Unless `replacingOwnCopy`, the
    /// destination must not hold other content already.
    private static func copy(
        _ bytes: SecretBytes, of item: KeyringItem, to destination: any KeyringStore, replacingOwnCopy: Bool,
        _ deadline: Deadline
    ) throws(SecureDictionaryError) {
        if let existing = try destination.load(item, timeout: deadline.remainingForCall()) {
            if existing.holdsSameBytes(as: bytes) { return }
            if !replacingOwnCopy { throw .alreadyExists(name: item.name) }
        }
        try destination.store(bytes, for: item, timeout: deadline.remainingForCall())
        guard try destination.load(item, timeout: deadline.remainingForCall())?.holdsSameBytes(as: bytes) == true else {
            throw .writeNotVerified(restored: false)
        }
    }
}

/// A store that knows where it keeps its items only once it chose a store to keep them in
/// (`AutomaticStore`): ``SecureDictionary/move(name:applicationID:collection:from:to:timeout:)``
/// has it choose before it compares the two places.
package protocol PlaceChoosingStore: CoordinatedStore {
    /// Chooses, if not done yet, within `deadline`, and says where the items are kept (as
    /// ``CoordinatedStore/place``).
    func choosePlace(until deadline: Deadline) throws(SecureDictionaryError) -> String?
}
