import SecureDictionary

/// What every encrypted-file store does with its folder, whatever its key: the
/// `KeyringStore` calls, on `ItemFileFolder`, `EncryptedItemFile`,
/// `GenerationRecord` and a `MasterKeySource`.
///
/// A load reads the file, refuses one older than the session has seen (a rollback), gets
/// the master secret its key block asks for, and decrypts. A store (called under the
/// folder's writer lock, after the check) reads the replaced file's header, writes the new
/// file under the same key with a larger generation, and records that generation.
struct ItemFileStore: Sendable {
    let folder: ItemFileFolder
    let keys: any MasterKeySource
    /// Throws when the store cannot work here at all, before anything is read or created
    /// (the Secret portal outside a sandbox, where otherwise a dictionary without a file
    /// would open empty and a refused write would create the folder).
    var available: @Sendable () throws(SecureDictionaryError) -> Void = {}

    func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes? {
        try available()
        let deadline = Deadline(after: timeout)
        let name = ItemFileFolder.fileName(of: item)
        let found = try folder.withFolder(create: false) {
            descriptor throws(SecureDictionaryError) -> (bytes: [UInt8], record: GenerationRecord, newest: UInt64)? in
            // The record before the file (`GenerationRecord`'s rule "read the record first").
            let record = try folder.record(of: name, in: descriptor)
            let newest = record.newest
            guard let bytes = try folder.read(name, in: descriptor, upTo: EncryptedItemFile.maximumFileSize) else { return nil }
            return (bytes, record, newest)
        }
        guard let (bytes, record, newest) = found ?? nil else { return nil }
        let header = try EncryptedItemFile.wholeFileHeader(of: bytes)
        guard header.generation >= newest else { throw .rolledBack(path: folder.filePath(of: item)) }
        let secret = try keys.secret(opening: KeyedFile.whole(bytes, named: name, header: header), in: folder, until: deadline)
        let blob = try EncryptedItemFile.open(bytes, header: header, for: item, secret: secret)
        record.note(header.generation, written: false)
        return blob
    }

    func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        try available()
        let deadline = Deadline(after: timeout)
        let name = ItemFileFolder.fileName(of: item)
        _ = try folder.withFolder(create: true) { descriptor throws(SecureDictionaryError) in
            let replaced = try? folder.read(name, in: descriptor, upTo: EncryptedItemFile.maximumHeaderSize)
                .flatMap { try EncryptedItemFile.header(of: $0) }
            let (block, master) = try keys.keyForWriting(replacing: replaced?.key, in: folder, until: deadline)
            let record = try folder.record(of: name, in: descriptor)
            let generation = record.next(after: replaced?.generation ?? 0)
            let file = try EncryptedItemFile.seal(secret, for: item, key: block, secret: master, generation: generation)
            try folder.replace(name, in: descriptor, with: file)
            record.note(generation, written: true)
        }
    }

    func delete(_ item: KeyringItem) throws(SecureDictionaryError) -> Bool {
        try available()
        return try folder.remove(item)
    }

    func listItems(applicationID: String?, collection: KeyringCollection) throws(SecureDictionaryError)
        -> [KeyringItemListing]
    {
        try available()
        return try folder.headers()
            .map(\.header)
            .filter { $0.alias == collection.alias && (applicationID == nil || $0.applicationID == applicationID) }
            .compactMap { header in
                try? KeyringItem(
                    dictionaryName: header.dictionaryName.isEmpty ? nil : header.dictionaryName,
                    applicationID: header.applicationID, collection: collection)
            }
            .sorted { $0.name < $1.name }
            .map { KeyringItemListing(item: $0, isLocked: false) }
    }

    /// The item's own lock: held from the check to the write, and across a refresh.
    func writerLock(for item: KeyringItem) -> any ItemWriterLock {
        ItemFileLock(folder: folder, item: item, available: available)
    }

    /// The folder's lock: held from a check to its write only.
    func writeLock() -> any ItemWriterLock {
        FileWriterLock(folder: folder, available: available)
    }
}
