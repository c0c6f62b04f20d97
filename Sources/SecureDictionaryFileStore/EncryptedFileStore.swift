import Logging
public import SecureDictionary
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A `KeyringStore` for machines without a keyring (SSH, containers, CI, systemd
/// services): each dictionary is one encrypted file in a folder, under a master secret from
/// a ``KeySource``: a systemd credential or a passphrase.
///
/// ```swift
/// // A systemd service with LoadCredentialEncrypted=securedictionary:… and StateDirectory=…
/// let store = EncryptedFileStore(keySource: .systemdCredential())
/// let tokens = try SecureDictionary(name: "tokens", options: .init(store: store))
///
/// // A person over SSH: asked once, then kept for the login session in the kernel keyring.
/// let mine = EncryptedFileStore(keySource: .passphrase(.terminal()))
/// try mine.unlock()                       // ask now, rather than inside the first call
/// ```
///
/// The files are those of ``SecretPortalStore`` (AES-256-GCM under HKDF-SHA256 keys, an
/// authenticated header naming the item, atomic replacement, the check before every write,
/// hostile-input decoding), plus:
/// - the folder is checked as OpenSSH checks `~/.ssh`: no symbolic link, this user's, and
///   writable by nobody else, nor any folder above it (``FileStoreError/unsafePath(path:reason:)``);
/// - a writer locks its item (an empty `.NAME.lock` file beside the item's file), and
///   from its check to its write the folder itself, which nobody else can remove or swap;
///   it never writes without both. A token refresh holds its item's lock across its network
///   call and the folder's only for its write, so it never holds up the folder's other
///   dictionaries;
/// - `SecureDictionary.changes()` hears other processes' writes (inotify on the folder),
///   as it hears the keyring's signals;
/// - each file carries a generation; one older than this process or this login session has
///   seen is refused (``FileStoreError/rolledBack(path:)``), whatever path spells the
///   folder;
/// - a key other than the one the files were written with is a typed error
///   (``FileStoreError/wrongPassphrase``, ``FileStoreError/wrongKey(source:)``),
///   never empty; a damaged file is `SecureDictionaryError.corrupt(reason:)`, never a wrong
///   key, and a planted scrypt cost is refused before any stretch.
///
/// The master secret (and, for a passphrase, its stretched key) is kept in wiped memory
/// until `forgetKey()` or the store's release.
///
/// - Important: the files are as safe as the key source: whoever reads both the folder and
///   the credential (root, the service itself) or knows the passphrase reads the files.
///   Moving a dictionary to the keyring once one runs:
///   `SecureDictionary.move(name:applicationID:collection:from:to:timeout:)`.
public final class EncryptedFileStore: KeyringStore, ItemFileBackedStore {
    /// The folder of the encrypted files.
    public let folderPath: String
    /// Where the master secret comes from.
    public let keySource: KeySource
    /// How `folderPath` was chosen, and what is wrong with it for a service: for
    /// `secure-dict doctor` and the tool's messages.
    package let folderOrigin: FolderOrigin
    private static let warned = Mutex<Set<String>>([])
    package let engine: ItemFileStore
    private let passphrase: PassphraseKeySource?

    /// A store in `folderPath`, by default `$STATE_DIRECTORY/securedictionary` for a systemd
    /// credential when systemd set `STATE_DIRECTORY` (`StateDirectory=` in the unit), else
    /// `$XDG_DATA_HOME/securedictionary` (or `~/.local/share/securedictionary`).
    ///
    /// Creates nothing until the first write, and asks nothing until the first call that
    /// needs the key (or `unlock(timeout:)`).
    public init(folderPath: String? = nil, keySource: KeySource) {
        folderOrigin = Self.folderOrigin(given: folderPath, for: keySource)
        let folderPath = folderPath ?? Self.defaultFolderPath(for: keySource)
        self.folderPath = folderPath
        if let warning = folderOrigin.warning, Self.warned.withLock({ $0.insert(folderPath).inserted }) {
            fileStoreLogger.warning("\(warning)")
        }
        self.keySource = keySource
        let keys: any MasterKeySource
        switch keySource.kind {
        case .systemdCredential(let name):
            keys = FixedSecretSource(name: keySource.description) { _ throws(SecureDictionaryError) in
                try SystemdCredential.read(named: name)
            }
            passphrase = nil
        case .passphrase(let input, let cache, let cost):
            let source = PassphraseKeySource(
                input: input, cache: cache, cost: cost, prompt: "Passphrase for the SecureDictionary files in \(folderPath): ")
            keys = source
            passphrase = source
        }
        engine = ItemFileStore(folder: ItemFileFolder(path: folderPath), keys: keys)
    }

    /// Gets the key now, so that later calls need no prompt: reads the credential, or takes
    /// the passphrase from the session's kernel keyring or asks it (a new one, twice on a
    /// terminal, when the folder has no file yet).
    ///
    /// - Throws: ``FileStoreError/wrongPassphrase``, ``FileStoreError/passphraseUnavailable(reason:)``,
    ///   ``FileStoreError/credentialUnavailable(name:reason:)``, ``FileStoreError/unsafePath(path:reason:)``…
    public func unlock(timeout: Duration = .seconds(10)) throws(SecureDictionaryError) {
        _ = try engine.keys.keyForWriting(replacing: nil, in: engine.folder, until: Deadline(after: timeout))
    }

    /// Drops the master secret from memory (wiped) and, for a passphrase kept in the kernel
    /// keyring, revokes it there: the next call (of any process) reads or asks it again.
    public func forgetKey() {
        engine.keys.forget(in: engine.folder)
    }

    /// The default folder for `keySource` in `environment` (see `init(folderPath:keySource:)`).
    static func defaultFolderPath(
        for keySource: KeySource, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String {
        if case .systemdCredential = keySource.kind,
            let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first, state.hasPrefix("/")
        {
            return "\(state)/securedictionary"
        }
        return SecretPortalStore.defaultFolderPath(environment: environment)
    }
}

extension EncryptedFileStore {
    /// Re-encrypts every file of the folder under a new passphrase (with a new salt), each
    /// read back and compared before the next, holding the folder's writer lock throughout.
    /// The old passphrase is taken from memory or the kernel keyring, or asked; the new one
    /// is read from `newPassphrase` (default: where the store reads its passphrase). The
    /// old one's kernel keyring entry is revoked. Returns how many files were re-encrypted.
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
        guard let passphrase else { throw .invalidValue(reason: "this store's key is not a passphrase") }
        let deadline = Deadline(after: timeout)
        let held = try engine.writeLock().acquireQueued(until: deadline)  // the folder's: every file is rewritten
        defer { held.release() }
        let folder = engine.folder
        // Every file decrypted with the old passphrase first: a wrong one changes nothing.
        var files: [(name: String, header: EncryptedItemFile.Header, blob: SecretBytes)] = []
        var oldParameters: Set<ScryptParameters> = []
        _ = try folder.withFolder(create: false) { descriptor throws(SecureDictionaryError) in
            for name in folder.itemFileNames(in: descriptor) {
                guard let bytes = try folder.read(name, in: descriptor, upTo: EncryptedItemFile.maximumFileSize) else { continue }
                let header = try EncryptedItemFile.wholeFileHeader(of: bytes)
                let item = try KeyringItem(
                    dictionaryName: header.dictionaryName.isEmpty ? nil : header.dictionaryName,
                    applicationID: header.applicationID, collection: KeyringCollection(alias: header.alias))
                guard ItemFileFolder.fileName(of: item) == name else { continue }  // a file under another's name
                let record = try folder.record(of: name, in: descriptor)
                guard header.generation >= record.newest else { throw .rolledBack(path: folder.filePath(of: item)) }
                let secret = try passphrase.secret(
                    opening: KeyedFile.whole(bytes, named: name, header: header), in: folder, until: deadline)
                files.append((name, header, try EncryptedItemFile.open(bytes, header: header, for: item, secret: secret)))
                if let scrypt = header.key?.scrypt { oldParameters.insert(scrypt) }
            }
        }
        let (block, secret) = try passphrase.newPassphrase(input: newPassphrase)
        _ = try folder.withFolder(create: true) { descriptor throws(SecureDictionaryError) in
            for file in files {
                let item = try KeyringItem(
                    dictionaryName: file.header.dictionaryName.isEmpty ? nil : file.header.dictionaryName,
                    applicationID: file.header.applicationID, collection: KeyringCollection(alias: file.header.alias))
                let record = try folder.record(of: file.name, in: descriptor)
                let generation = record.next(after: file.header.generation)
                let sealed = try EncryptedItemFile.seal(file.blob, for: item, key: block, secret: secret, generation: generation)
                try folder.replace(file.name, in: descriptor, with: sealed)
                record.note(generation, written: true)
                guard let back = try folder.read(file.name, in: descriptor, upTo: EncryptedItemFile.maximumFileSize) else {
                    throw .writeNotVerified(restored: false)
                }
                let opened = try EncryptedItemFile.open(
                    back, header: EncryptedItemFile.wholeFileHeader(of: back), for: item, secret: secret)
                guard opened.holdsSameBytes(as: file.blob) else { throw .writeNotVerified(restored: false) }
            }
        }
        for parameters in oldParameters where parameters != block.scrypt {
            KernelKeyring.revoke(PassphraseKeySource.cacheDescription(parameters))
        }
        return files.count
    }
}
