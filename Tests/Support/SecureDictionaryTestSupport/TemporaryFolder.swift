import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A folder of one test's own under the temporary directory, private to this user (mode 0700,
/// as the encrypted-file stores want their folders' parents), and where asked, a credential
/// in it as systemd hands one to a service.
///
/// ```swift
/// let base = try TemporaryFolder.create("sd-store", credential: true)
/// let environment = ["CREDENTIALS_DIRECTORY": "\(base)/credentials", "STATE_DIRECTORY": "\(base)/state"]
/// ```
public enum TemporaryFolder {
    /// Makes `<temporary directory>/<prefix>-<UUID>` and returns its path. With `credential`,
    /// `base/credentials/securedictionary` holds 32 random bytes: the key of an
    /// `EncryptedFileStore(keySource: .systemdCredential())` whose `$CREDENTIALS_DIRECTORY`
    /// is `base/credentials`.
    ///
    /// - Throws: what `FileManager` throws when the folder or the credential cannot be written.
    public static func create(_ prefix: String, credential: Bool = false) throws -> String {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: credential ? "\(base)/credentials" : base, withIntermediateDirectories: true)
        chmod(base, 0o700)
        if credential {
            let key = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
            try key.write(to: URL(fileURLWithPath: "\(base)/credentials/securedictionary"))
        }
        return base
    }
}
