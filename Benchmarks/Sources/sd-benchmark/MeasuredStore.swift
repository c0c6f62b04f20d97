import Foundation
import SecureDictionary
import SecureDictionaryFileStore

/// The store a `provider-latency` run measures, and how `secure-dict` is told to use it:
/// the only place that names a store type, so that a renamed store changes one file.
enum MeasuredStore: String, CaseIterable, Codable {
    /// The Secret Service of the session (whichever provider scripts/with-private-keyring started).
    case keyring
    /// `EncryptedFileStore` under a systemd credential (`$CREDENTIALS_DIRECTORY/NAME`).
    case credential
    /// `EncryptedFileStore` under a passphrase whose stretched key the kernel keyring keeps.
    case passphrase
    /// The Secret portal's file store; only inside a sandbox (scripts/sandbox-run).
    case portal

    /// The store's type as the table names it.
    var typeName: String {
        switch self {
        case .keyring: "SecretServiceStore"
        case .credential, .passphrase: "EncryptedFileStore"
        case .portal: "EncryptedFileStore.secretPortal"
        }
    }

    /// Whether raw libsecret on the same provider is the baseline (a file store has none).
    var hasRawBaseline: Bool { self == .keyring }

    /// The credential's name in `$CREDENTIALS_DIRECTORY`.
    static let credentialName = "sd-benchmark"
    /// The passphrase of the passphrase store (a throwaway folder, never a user's).
    static let passphraseText = "sd-benchmark passphrase, not a secret"

    /// A ready store, its folder (file stores) and its `secure-dict` options. For a file
    /// store, makes a new folder in `scratch`; for the credential, writes the credential
    /// there and points `CREDENTIALS_DIRECTORY` at it (this process and its children).
    func make(scratch: String) throws -> (store: any KeyringStore, cliOptions: [String], cliInput: String) {
        switch self {
        case .keyring:
            return (SecretServiceStore.shared, [], "")
        case .credential:
            let credentials = scratch + "/credentials"
            try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
            try Files.write(Fixtures.bytes(64, seed: 99), to: credentials + "/" + Self.credentialName)
            setenv("CREDENTIALS_DIRECTORY", credentials, 1)
            let folder = scratch + "/files"
            let store = EncryptedFileStore(folderPath: folder, keySource: .systemdCredential(named: Self.credentialName))
            return (store, ["--store", "credential", "--credential", Self.credentialName, "--folder", folder], "")
        case .passphrase:
            let folder = scratch + "/files"
            let input = try Self.passphraseDescriptor()
            let store = EncryptedFileStore(
                folderPath: folder, keySource: .passphrase(.fileDescriptor(input), cache: .kernelKeyring()))
            // The tool finds the stretched key in the kernel keyring; it reads the passphrase
            // from standard input only if the key is not there.
            return (store, ["--store", "passphrase", "--folder", folder, "--passphrase-fd", "0"], Self.passphraseText + "\n")
        case .portal:
            return (EncryptedFileStore.secretPortal, ["--store", "portal"], "")
        }
    }

    /// Forgets what the store keeps beyond this process (the passphrase's cached key).
    func forget(_ store: any KeyringStore) {
        if let files = store as? EncryptedFileStore { files.forgetKey() }
    }

    /// A pipe whose read end holds the passphrase, a few lines of it (one per ask).
    private static func passphraseDescriptor() throws -> Int32 {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw BenchmarkError("pipe failed") }
        let lines = String(repeating: passphraseText + "\n", count: 4)
        let written = lines.utf8CString.withUnsafeBufferPointer { write(ends[1], $0.baseAddress, $0.count - 1) }
        guard written == lines.utf8.count else { throw BenchmarkError("cannot write the passphrase to its pipe") }
        close(ends[1])
        return ends[0]
    }
}
