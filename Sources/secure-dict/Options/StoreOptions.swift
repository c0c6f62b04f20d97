import ArgumentParser
import FoundationEssentials
import SecureDictionary
import SecureDictionaryFileStore
import Synchronization

/// The environment variable that `--store` falls back to.
let storeEnvironmentVariable = "SECURE_DICT_STORE"

/// `--store` and the options of the encrypted-file stores: where the dictionaries are.
struct StoreOptions: ParsableArguments {
    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case keyring, auto, credential, passphrase, portal
    }

    enum FileKey: String, ExpressibleByArgument, CaseIterable {
        case credential, passphrase
    }

    @Option(
        help: ArgumentHelp(
            "Where the dictionaries are: 'keyring' (the Secret Service, the default), 'credential' or 'passphrase' (encrypted files under a systemd credential or a passphrase), 'portal' (a sandboxed app's files), or 'auto' (the keyring when one answers, the portal in a sandbox, else the files of --file-key). Default: $\(storeEnvironmentVariable), else keyring.",
            valueName: "STORE"))
    var store: Kind?

    @Option(
        name: .customLong("file-key"),
        help: ArgumentHelp(
            "With --store auto: the encrypted files to use where no keyring answers, under a 'credential' or a 'passphrase' (without it, such a machine is an error).",
            valueName: "KEY"))
    var fileKey: FileKey?

    @Option(
        help: ArgumentHelp(
            "The folder of the encrypted files. Default: $STATE_DIRECTORY/securedictionary for a credential in a service, else $XDG_DATA_HOME/securedictionary.",
            valueName: "DIR"))
    var folder: String?

    @Option(
        help: ArgumentHelp(
            "The systemd credential that holds the files' key ($CREDENTIALS_DIRECTORY/NAME).", valueName: "NAME"))
    var credential = "securedictionary"

    @Option(
        name: .customLong("passphrase-fd"),
        help: ArgumentHelp(
            "Read the passphrase as one line from this open file descriptor (3, with 3<FILE) instead of asking on the terminal.",
            valueName: "FD"))
    var passphraseFD: Int32?

    func validate() throws {
        if fileKey != nil, kind != .auto {
            throw ValidationError("--file-key goes with --store auto (the store where no keyring answers)")
        }
        if let passphraseFD, passphraseFD < 0 { throw ValidationError("--passphrase-fd must be an open descriptor number") }
        if let folder, !folder.hasPrefix("/") { throw ValidationError("--folder must be an absolute path") }
    }

    /// `--store`, else `$SECURE_DICT_STORE`, else keyring.
    var kind: Kind {
        store ?? ProcessInfo.processInfo.environment[storeEnvironmentVariable].flatMap { Kind(rawValue: $0) } ?? .keyring
    }

    /// The store these options name: one per configuration in the process, so that every
    /// dictionary a command opens shares its key (a passphrase is asked once).
    func makeStore() -> any KeyringStore {
        // Raw values: `\(kind)` would describe the enum through reflection, which costs every
        // run of the tool a few hundred thousand instructions (callgrind).
        let key =
            "\(kind.rawValue) \(fileKey.map(\.rawValue) ?? "-") \(folder ?? "-") \(credential) \(passphraseFD.map(String.init) ?? "tty")"
        return Self.made.withLock { made in
            if let store = made[key] { return store }
            let store: any KeyringStore =
                switch kind {
                case .keyring: SecretServiceStore.shared
                case .portal: EncryptedFileStore.secretPortal
                case .credential: fileStore(.credential)
                case .passphrase: fileStore(.passphrase)
                case .auto: AutomaticStore(fileStore: fileKey.map(fileStore))
                }
            made[key] = store
            return store
        }
    }

    private static let made = Mutex<[String: any KeyringStore]>([:])

    private func fileStore(_ key: FileKey) -> EncryptedFileStore {
        switch key {
        case .credential:
            return EncryptedFileStore(folderPath: folder, keySource: .systemdCredential(named: credential))
        case .passphrase:
            let input: EncryptedFileStore.PassphraseInput = passphraseFD.map { .fileDescriptor($0) } ?? .terminal()
            return EncryptedFileStore(folderPath: folder, keySource: .passphrase(input))
        }
    }
}
