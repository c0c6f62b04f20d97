package import Logging
public import SecureDictionary
import Synchronization

/// A `KeyringStore` for machines without a keyring (SSH, containers, CI, systemd
/// services) and for sandboxed apps that may not talk to it (Flatpak, snap): each dictionary
/// is one encrypted file in a folder, under a master secret from a ``KeySource``: a systemd
/// credential, a passphrase, or the desktop's Secret portal.
///
/// ```swift
/// // A systemd service with LoadCredentialEncrypted=securedictionary:… and StateDirectory=…
/// let store = EncryptedFileStore(keySource: .systemdCredential())
/// let tokens = try SecureDictionary(name: "tokens", options: .init(store: store))
///
/// // A person over SSH: asked once, then kept for the login session in the kernel keyring.
/// let mine = EncryptedFileStore(keySource: .passphrase(.terminal()))
/// try mine.unlock()                       // ask now, rather than inside the first call
///
/// // In a Flatpak without --talk-name=org.freedesktop.secrets: the portal's key.
/// let settings = try SecureDictionary(
///     name: "settings", applicationID: "org.example.App", options: .init(store: EncryptedFileStore.secretPortal))
/// ```
///
/// Each file is AES-256-GCM (HKDF-SHA256 of the master secret, a new salt and nonce per
/// write), replaced atomically; other processes' writes reach `SecureDictionary.changes()`.
/// What guards the folder (<doc:MachinesWithoutADesktop>) throws: a folder others could swap
/// is ``FileStoreError/unsafePath(path:reason:)``, an old copy put back
/// ``FileStoreError/rolledBack(path:)``. Another key is ``FileStoreError/wrongPassphrase`` or
/// ``FileStoreError/wrongKey(source:)``, never empty; a damaged file is
/// `SecureDictionaryError.corrupt(reason:)`. Keys stay in wiped memory until `forgetKey()` or the release.
///
/// - Important: the files are as safe as the key source: whoever reads both the folder and
///   the credential (root, the service itself) or the host keyring (for the portal: any
///   unsandboxed process of the user while it is unlocked), or knows the passphrase, reads
///   the files. Moving a dictionary to or from the keyring:
///   `SecureDictionary.move(name:applicationID:collection:from:to:timeout:)`.
public final class EncryptedFileStore: KeyringStore, CoordinatedStore {
    /// The Secret portal's store in the default folder (``KeySource/secretPortal``), shared
    /// by every dictionary that names it.
    public static let secretPortal = EncryptedFileStore(keySource: .secretPortal)

    /// The folder of the encrypted files.
    public let folderPath: String
    /// Where the master secret comes from.
    public let keySource: KeySource
    /// How `folderPath` was chosen, and what is wrong with it for a service: for
    /// `secure-dict doctor` and the tool's messages.
    package let folderOrigin: FolderOrigin
    private static let warned = Mutex<Set<String>>([])
    let folder: ItemFileFolder
    let keys: any MasterKeySource
    /// Throws, before anything is read or created, where the store cannot work at all: the
    /// Secret portal outside a sandbox (else a dictionary would open empty there).
    let available: (@Sendable () throws(SecureDictionaryError) -> Void)?

    /// A store in `folderPath` (a relative one from the current folder now), by default
    /// `$STATE_DIRECTORY/securedictionary` for a systemd credential under `StateDirectory=`,
    /// else `$XDG_DATA_HOME/securedictionary` (or `~/.local/share/securedictionary`). Creates
    /// nothing until the first write, and asks nothing until the first call that needs the key.
    public init(folderPath: String? = nil, keySource: KeySource) {
        let (folderPath, origin) =
            folderPath.map { (Self.absolute($0), FolderOrigin.given) } ?? Self.defaultFolder(for: keySource)
        (self.folderPath, folderOrigin) = (folderPath, origin)
        if let warning = folderOrigin.warning, Self.warned.withLock({ $0.insert(folderPath).inserted }) {
            fileStoreLogger.warning("\(warning)")
        }
        self.keySource = keySource
        folder = ItemFileFolder(path: folderPath)
        available = keySource == .secretPortal ? SecretPortal.requireSandbox : nil
        switch keySource.kind {
        case .systemdCredential(let name):
            keys = FixedSecretSource(name: keySource.description) { _ throws(SecureDictionaryError) in
                try SystemdCredential.read(named: name)
            }
        case .passphrase(let input, let cache, let cost):
            keys = PassphraseKeySource(
                input: input, cache: cache, cost: cost, prompt: "Passphrase for the SecureDictionary files in \(folderPath): ")
        case .secretPortal:
            keys = FixedSecretSource(name: keySource.description, fetch: SecretPortal.retrieveMasterSecret)
        }
    }

    /// A store in `folderPath` whose master secret comes from `fetchMasterSecret` (tests),
    /// named as `keySource`, usable anywhere.
    init(
        folderPath: String, keySource: KeySource = .secretPortal,
        fetchMasterSecret: @escaping @Sendable (Duration) throws(SecureDictionaryError) -> SecretBytes
    ) {
        self.folderPath = folderPath
        self.keySource = keySource
        folderOrigin = .given
        folder = ItemFileFolder(path: folderPath)
        keys = FixedSecretSource(name: keySource.description, fetch: fetchMasterSecret)
        available = nil
    }

    /// Gets the key now, so that later calls need no prompt: reads the credential, fetches the
    /// portal's secret, or takes the passphrase from the kernel keyring or asks it (a new one,
    /// twice on a terminal, when the folder has no file yet).
    ///
    /// - Throws: ``FileStoreError/wrongPassphrase``, ``FileStoreError/passphraseUnavailable(reason:)``,
    ///   ``FileStoreError/credentialUnavailable(name:reason:)``, ``FileStoreError/portalUnavailable(reason:)``,
    ///   ``FileStoreError/unsafePath(path:reason:)``…
    public func unlock(timeout: Duration = .seconds(10)) throws(SecureDictionaryError) {
        try available?()
        _ = try keys.keyForWriting(replacing: nil, in: folder, until: Deadline(after: timeout))
    }

    /// Drops the master secret from memory (wiped) and revokes a passphrase kept in the kernel
    /// keyring: the next call, of any process, reads, asks or fetches it again.
    public func forgetKey() {
        keys.forget(in: folder)
    }
}

// The `KeyringStore` calls. `store` runs under the folder's write lock (`FileStoreLock`),
// after the check, and keeps the replaced file's key.
extension EncryptedFileStore {
    public func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes? {
        try available?()
        let deadline = Deadline(after: timeout)
        let name = ItemFileFolder.fileName(of: item)
        let found = try folder.withFolder(create: false) {
            descriptor, identity throws(SecureDictionaryError) -> (bytes: [UInt8], record: GenerationRecord, newest: UInt64)? in
            // The record before the file (`GenerationRecord`'s rule "read the record first").
            let record = folder.record(of: name, in: identity)
            let newest = record.newest
            guard let bytes = try folder.read(name, in: descriptor, upTo: EncryptedItemFile.maximumFileSize) else { return nil }
            return (bytes, record, newest)
        }
        guard let (bytes, record, newest) = found ?? nil else { return nil }
        let (header, blob) = try open(bytes, of: item, newest: newest, until: deadline)
        record.note(header.generation, written: false)
        return blob
    }

    public func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        try available?()
        let deadline = Deadline(after: timeout)
        let name = ItemFileFolder.fileName(of: item)
        _ = try folder.withFolder(create: true) { descriptor, identity throws(SecureDictionaryError) in
            let replaced = try? folder.read(name, in: descriptor, upTo: EncryptedItemFile.maximumHeaderSize)
                .flatMap { try EncryptedItemFile.header(of: $0) }
            let key = try keys.keyForWriting(replacing: replaced?.key, in: folder, until: deadline)
            try write(secret, for: item, after: replaced?.generation ?? 0, key: key, in: descriptor, identity)
        }
    }

    public func delete(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> Bool {
        try available?()
        return try folder.remove(item)
    }

    public func listItems(applicationID: String?, collection: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [KeyringItemListing]
    {
        try available?()
        return try folder.items().map(\.item)
            .filter { $0.collection == collection && (applicationID == nil || $0.applicationID == applicationID) }
            .sorted { $0.name < $1.name }
            .map { KeyringItemListing(item: $0, isLocked: false) }
    }

    /// The item's own lock: held from the check to the write, and across a refresh.
    package func writerLock(for item: KeyringItem, logger: Logger) -> any ItemWriterLock {
        FileStoreLock(folder: folder, itemFile: FileStoreLock.lockFileName(of: item), available: available)
    }

    /// The folder's lock: held from a check to its write only.
    package func writeLock(for item: KeyringItem, logger: Logger) -> (any ItemWriterLock)? {
        FileStoreLock(folder: folder, itemFile: nil, available: available)
    }

    package func watchChanges(_ onChange: @escaping @Sendable (KeyringChange) -> Void) -> (any ChangeWatch)? {
        FolderWatcher(folder: folder.path) { onChange(.items) }
    }

    package var place: String? { folder.place }
}

extension EncryptedFileStore {
    /// Re-encrypts every file of the folder under a new passphrase (and salt), each read back
    /// and compared before the next, under the folder's write lock throughout. The old
    /// passphrase comes from memory or the kernel keyring, or is asked, and is then revoked
    /// there; the new one from `newPassphrase` (default: the store's input). Returns how many
    /// files were re-encrypted.
    ///
    /// ```swift
    /// let store = EncryptedFileStore(keySource: .passphrase(.terminal()))
    /// let count = try store.changePassphrase()        // asks the old one, then the new one twice
    /// ```
    ///
    /// A change that stops halfway (a crash, a full disk) leaves each file whole, under the
    /// old passphrase or the new one: run it again with the old passphrase for the rest.
    ///
    /// - Throws: ``FileStoreError/wrongPassphrase`` for a wrong old passphrase
    ///   (nothing changed); `SecureDictionaryError.writeNotVerified(restored:)` when a
    ///   file read back differently (it is left as written, and the change stops);
    ///   `SecureDictionaryError.invalidValue(reason:)` for a store whose key is no passphrase.
    @discardableResult
    public func changePassphrase(to newPassphrase: PassphraseInput? = nil, timeout: Duration = .seconds(60))
        throws(SecureDictionaryError) -> Int
    {
        guard let passphrase = keys as? PassphraseKeySource else {
            throw .invalidValue(reason: "this store's key is not a passphrase")
        }
        let deadline = Deadline(after: timeout)
        let folderLock = FileStoreLock(folder: folder, itemFile: nil, available: available)
        let held = try folderLock.acquireQueued(until: deadline)  // the folder's: every file is rewritten
        defer { held.release() }
        // Every file decrypted with the old passphrase first: a wrong one changes nothing.
        var files: [(item: KeyringItem, generation: UInt64, blob: SecretBytes)] = []
        var oldParameters: Set<ScryptParameters> = []
        _ = try folder.withFolder(create: false) { descriptor, identity throws(SecureDictionaryError) in
            for name in folder.itemFileNames(in: descriptor) {
                guard let bytes = try folder.read(name, in: descriptor, upTo: EncryptedItemFile.maximumFileSize) else { continue }
                let item = try EncryptedItemFile.wholeFileHeader(of: bytes).item()
                guard ItemFileFolder.fileName(of: item) == name else { continue }  // a file under another's name
                let (header, blob) = try open(
                    bytes, of: item, newest: folder.record(of: name, in: identity).newest, until: deadline)
                files.append((item, header.generation, blob))
                if let scrypt = header.key?.scrypt { oldParameters.insert(scrypt) }
            }
        }
        let (block, secret) = try passphrase.newPassphrase(input: newPassphrase)
        _ = try folder.withFolder(create: true) { descriptor, identity throws(SecureDictionaryError) in
            for file in files {
                try write(file.blob, for: file.item, after: file.generation, key: (block, secret), in: descriptor, identity)
                let name = ItemFileFolder.fileName(of: file.item)
                guard let back = try folder.read(name, in: descriptor, upTo: EncryptedItemFile.maximumFileSize) else {
                    throw .writeNotVerified(restored: false)
                }
                let opened = try EncryptedItemFile.open(
                    back, header: EncryptedItemFile.wholeFileHeader(of: back), for: file.item, secret: secret)
                guard opened.holdsSameBytes(as: file.blob) else { throw .writeNotVerified(restored: false) }
            }
        }
        for parameters in oldParameters where parameters != block.scrypt {
            KernelKeyring.revoke(PassphraseKeySource.cacheDescription(parameters))
        }
        return files.count
    }

    /// `item`'s file `bytes` opened with the key its header names, or `rolledBack` when older
    /// than `newest`.
    private func open(_ bytes: [UInt8], of item: KeyringItem, newest: UInt64, until deadline: Deadline)
        throws(SecureDictionaryError) -> (header: EncryptedItemFile.Header, blob: SecretBytes)
    {
        let header = try EncryptedItemFile.wholeFileHeader(of: bytes)
        guard header.generation >= newest else { throw .rolledBack(path: folder.filePath(of: item)) }
        let file = KeyedFile(name: ItemFileFolder.fileName(of: item), block: header.key) {
            EncryptedItemFile.opensWithRestoredCheck(bytes, header: header, secret: $0)
        }
        let secret = try keys.secret(opening: file, in: folder, until: deadline)
        return (header, try EncryptedItemFile.open(bytes, header: header, for: item, secret: secret))
    }

    /// Writes `item`'s file in the open folder with a generation above `generation`, then records it.
    private func write(
        _ blob: SecretBytes, for item: KeyringItem, after generation: UInt64, key: (KeyBlock, SecretBytes), in descriptor: Int32,
        _ identity: FolderIdentity
    ) throws(SecureDictionaryError) {
        let name = ItemFileFolder.fileName(of: item)
        let record = folder.record(of: name, in: identity)
        let next = record.next(after: generation)
        try folder.replace(
            name, in: descriptor, with: EncryptedItemFile.seal(blob, for: item, key: key.0, secret: key.1, generation: next))
        record.note(next, written: true)
    }
}
