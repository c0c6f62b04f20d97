public import SecureDictionary

/// The failures of the encrypted-file stores, thrown as `SecureDictionaryError.store(_:)`
/// (<doc:FileStoreErrors>); what any store can meet (`timedOut`, `corrupt`…) keeps its own
/// case of `SecureDictionaryError`.
///
/// ```swift
/// let store = EncryptedFileStore(keySource: .passphrase(.terminal()))
/// do {
///     try store.unlock()
/// } catch SecureDictionaryError.store(FileStoreError.wrongPassphrase) {
///     print("Wrong passphrase: try again.")
/// } catch SecureDictionaryError.store(let error as FileStoreError) {
///     switch error {
///     case .unsafePath(let path, _): print("Fix the folder \(path) first: \(error)")
///     default: print("The encrypted files cannot be used: \(error)")
///     }
/// } catch {
///     print("Not unlocked: \(error)")
/// }
/// ```
///
/// No case carries a key, a value or secret bytes: paths, credential names and reasons only.
/// Its `description` says what happened, then the one fix. Unless a case says otherwise,
/// nothing was read or written.
public enum FileStoreError: KeyringStoreError {
    /// The Secret portal cannot give this app its master secret: there is none, it has no
    /// Secret backend, or this process is not a sandboxed app.
    case portalUnavailable(reason: String)
    /// A file cannot be read or written (a full disk, a read-only or missing folder). A
    /// write that fails with it left the previous file in place.
    case fileUnavailable(path: String, reason: String)
    /// A folder or file that someone else could swap or read: a symbolic link, a folder of
    /// another user, or one that others may write to. `reason` says which, and the fix.
    case unsafePath(path: String, reason: String)
    /// The passphrase given is not the one the files were written with; it was not kept.
    case wrongPassphrase
    /// A file was written under another key than the store's (`source`: another systemd
    /// credential, another app's portal secret, or another kind of key).
    case wrongKey(source: String)
    /// The systemd credential `name` that holds the key is missing or unusable: `reason` says
    /// why, and the fix.
    case credentialUnavailable(name: String, reason: String)
    /// The store needs its passphrase and none could be read (`reason`: no terminal, an
    /// empty or closed descriptor, nobody typed it in time).
    case passphraseUnavailable(reason: String)
    /// A file is older than a version this login session (or this process) already read or
    /// wrote: an old copy was put back. Nothing was read or written over it.
    case rolledBack(path: String)
    /// ``AutomaticStore`` found no Secret Service (`reason`), no sandbox for the Secret
    /// portal, and no encrypted-file store configured.
    case noStoreAvailable(reason: String)

    /// What happened, in one sentence, then the one fix. Never a key or a value.
    public var description: String {
        switch self {
        case .portalUnavailable(let reason):
            "The Secret portal cannot give this app its secret (\(reason)); nothing was read or written."
        case .fileUnavailable(let path, let reason):
            "Cannot use the file \(path) (\(reason)); a write left the previous file in place."
        case .unsafePath(let path, let reason): "SecureDictionary will not use \(path): \(reason)."
        case .wrongPassphrase:
            "The passphrase is not the one these encrypted files were written with; nothing was read or written: "
                + "try again."
        case .wrongKey(let source):
            "The encrypted file was written with another key than this store's (\(source)): give the store the key "
                + "it was written with."
        case .credentialUnavailable(let name, let reason): "The systemd credential '\(name)' cannot be used: \(reason)."
        case .passphraseUnavailable(let reason):
            "No passphrase could be read (\(reason)): run the program on a terminal, or give the passphrase on a "
                + "file descriptor."
        case .rolledBack(let path):
            "\(path) is older than a copy this session already used, so an old copy was put back: restore the newest "
                + "copy."
        case .noStoreAvailable(let reason):
            "No keyring answers here (\(reason.prefix(40))) and no encrypted-file store is configured: start a "
                + "keyring, or give AutomaticStore a systemd credential or passphrase."
        }
    }
}

extension FileStoreError: NamedErrorCase {
    package var caseName: String {
        switch self {
        case .portalUnavailable: "portalUnavailable"
        case .fileUnavailable: "fileUnavailable"
        case .unsafePath: "unsafePath"
        case .wrongPassphrase: "wrongPassphrase"
        case .wrongKey: "wrongKey"
        case .credentialUnavailable: "credentialUnavailable"
        case .passphraseUnavailable: "passphraseUnavailable"
        case .rolledBack: "rolledBack"
        case .noStoreAvailable: "noStoreAvailable"
        }
    }
}

/// The file stores' failures as the `SecureDictionaryError` every call throws, so that the
/// stores' code says `throw .wrongPassphrase`.
extension SecureDictionaryError {
    static func portalUnavailable(reason: String) -> Self { .store(FileStoreError.portalUnavailable(reason: reason)) }
    static func fileUnavailable(path: String, reason: String) -> Self {
        .store(FileStoreError.fileUnavailable(path: path, reason: reason))
    }
    static func unsafePath(path: String, reason: String) -> Self { .store(FileStoreError.unsafePath(path: path, reason: reason)) }
    static var wrongPassphrase: Self { .store(FileStoreError.wrongPassphrase) }
    static func wrongKey(source: String) -> Self { .store(FileStoreError.wrongKey(source: source)) }
    static func credentialUnavailable(name: String, reason: String) -> Self {
        .store(FileStoreError.credentialUnavailable(name: name, reason: reason))
    }
    static func passphraseUnavailable(reason: String) -> Self { .store(FileStoreError.passphraseUnavailable(reason: reason)) }
    static func rolledBack(path: String) -> Self { .store(FileStoreError.rolledBack(path: path)) }
    static func noStoreAvailable(reason: String) -> Self { .store(FileStoreError.noStoreAvailable(reason: reason)) }
}
