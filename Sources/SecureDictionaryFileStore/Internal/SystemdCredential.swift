import FoundationEssentials
import Glibc
import SecureDictionary

/// A master secret handed to a service by systemd: the file `$CREDENTIALS_DIRECTORY/NAME`,
/// which systemd decrypts for the service from `LoadCredentialEncrypted=NAME:PATH` (or
/// `SetCredentialEncrypted=`) into memory only the service can read.
enum SystemdCredential {
    /// The fewest bytes accepted: a key, not a password (HKDF does not stretch).
    static let minimumSize = 32
    static let maximumSize = 4096

    /// - Throws: ``FileStoreError/credentialUnavailable(name:reason:)`` when the variable is
    ///   unset, the file missing or unreadable, or its size out of bounds (with the fix).
    static func read(named name: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(SecureDictionaryError) -> SecretBytes
    {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw .credentialUnavailable(name: name, reason: "it is not a valid credential name: give a file name without '/'")
        }
        let addIt = "add 'LoadCredentialEncrypted=\(name)' to the service's unit"
        guard let directory = environment["CREDENTIALS_DIRECTORY"], directory.hasPrefix("/") else {
            throw .credentialUnavailable(name: name, reason: "$CREDENTIALS_DIRECTORY is not set: \(addIt)")
        }
        let descriptor = open("\(directory)/\(name)", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            let reason =
                errno == ENOENT
                ? "no such file in $CREDENTIALS_DIRECTORY: \(addIt)"
                : "it cannot be read (\(String(cString: strerror(errno)))): check the unit's LoadCredentialEncrypted= line"
            throw .credentialUnavailable(name: name, reason: reason)
        }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: maximumSize + 1)
        defer { Wipe.bytes(&buffer) }
        guard let total = readFully(descriptor, into: &buffer) else {
            throw .credentialUnavailable(name: name, reason: "it cannot be read (\(String(cString: strerror(errno))))")
        }
        guard total >= minimumSize, total <= maximumSize else {
            // The unit has the credential, so the fix is a new one, not LoadCredentialEncrypted=.
            let held = total > maximumSize ? "more than \(maximumSize) bytes" : "\(total) bytes"
            throw .credentialUnavailable(
                name: name,
                reason: "it holds \(held), not a key: make a new one, 'head -c 32 /dev/urandom | systemd-creds encrypt "
                    + "--name=\(name) - FILE'")
        }
        return buffer.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<total])) }
    }
}
