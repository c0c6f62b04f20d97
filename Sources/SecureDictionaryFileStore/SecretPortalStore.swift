public import SecureDictionary

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The `KeyringStore` for sandboxed apps (Flatpak, snap) that may not talk to the Secret
/// Service: each dictionary is one encrypted file in the app's data folder, under a key
/// that only the desktop's Secret portal gives this app.
///
/// ```swift
/// // In a Flatpak without --talk-name=org.freedesktop.secrets:
/// let settings = try SecureDictionary(
///     name: "settings", applicationID: "org.example.App",
///     options: .init(store: SecretPortalStore.shared))
/// settings["token"] = "s3cr3t"
/// ```
///
/// How it works: the Secret portal (`org.freedesktop.portal.Secret`, served by
/// xdg-desktop-portal with the host keyring's backend, e.g. gnome-keyring) hands the app a
/// master secret of its own, which the host keyring keeps. Each file is encrypted and
/// authenticated with AES-256-GCM under a key derived from it with HKDF-SHA256 (a new salt
/// and nonce on every write), and its header names the item, authenticated too, so a file
/// cannot be swapped for another item's. Files are replaced atomically (write, `fsync`,
/// rename), and writers lock the folder, so processes of the app never lose each other's
/// writes. What is read is decoded as hostile input, as from the keyring. The folder checks,
/// rollback detection and key check of ``EncryptedFileStore`` apply here too.
///
/// The files live in `$XDG_DATA_HOME/securedictionary`: inside a Flatpak that is the app's
/// own `~/.var/app/APP-ID/data/securedictionary`. The master secret is fetched once, on
/// the first call that needs it, and kept (wiped on release) until `forgetMasterSecret()`.
///
/// - Important: the files are only as safe as the portal's secret: anyone who can read
///   both the app's data folder and the host keyring (any unsandboxed process of the
///   user, while the keyring is unlocked) can decrypt them, as they can read the keyring.
///   Moving a dictionary from the host keyring: `SecureDictionary.move(name:applicationID:collection:from:to:timeout:)`.
public final class SecretPortalStore: KeyringStore, ItemFileBackedStore {
    /// The store in the default folder, shared by every dictionary that names it.
    public static let shared = SecretPortalStore()

    /// The folder of the encrypted files.
    public let folderPath: String
    package let engine: ItemFileStore

    /// A store in `folderPath`, by default `$XDG_DATA_HOME/securedictionary` (or
    /// `~/.local/share/securedictionary` when `XDG_DATA_HOME` is unset or relative).
    ///
    /// Creates nothing until the first write. Every call needs the Secret portal, which
    /// serves sandboxed apps only: outside a sandbox, calls that read or write throw
    /// ``FileStoreError/portalUnavailable(reason:)``.
    public convenience init(folderPath: String? = nil) {
        self.init(folderPath: folderPath ?? Self.defaultFolderPath(), available: Self.inASandbox) {
            timeout throws(SecureDictionaryError) in
            try Self.inASandbox()
            return try SecretPortal.retrieveMasterSecret(timeout: timeout)
        }
    }

    /// A store whose master secret comes from `fetchMasterSecret` (tests), usable where
    /// `available` does not throw.
    init(
        folderPath: String, available: @escaping @Sendable () throws(SecureDictionaryError) -> Void = {},
        fetchMasterSecret: @escaping @Sendable (Duration) throws(SecureDictionaryError) -> SecretBytes
    ) {
        self.folderPath = folderPath
        engine = ItemFileStore(
            folder: ItemFileFolder(path: folderPath), keys: FixedSecretSource(name: "Secret portal", fetch: fetchMasterSecret),
            available: available)
    }

    /// Throws `portalUnavailable` outside a sandbox, where the portal never serves: before
    /// any call reads or creates anything, so that no dictionary opens empty there.
    @Sendable private static func inASandbox() throws(SecureDictionaryError) {
        guard Sandbox.current == nil else { return }
        throw .portalUnavailable(
            reason: "the Secret portal serves sandboxed apps (Flatpak, snap) only; outside a sandbox use SecretServiceStore")
    }

    /// Drops the master secret from memory (wiped); the next call fetches it again.
    public func forgetMasterSecret() {
        engine.keys.forget(in: engine.folder)
    }

    static func defaultFolderPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return "\(data)/securedictionary" }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/"
        return "\(home)/.local/share/securedictionary"
    }
}
