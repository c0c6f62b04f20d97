import SecureDictionary

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// A master secret handed to a service by systemd: the file `$CREDENTIALS_DIRECTORY/NAME`,
/// which systemd decrypts for the service from `LoadCredentialEncrypted=NAME:PATH` (or
/// `SetCredentialEncrypted=`) into memory only the service can read.
///
/// ```swift
/// let secret = try SystemdCredential.read(named: "securedictionary")
/// ```
enum SystemdCredential {
    /// The fewest bytes accepted: a key, not a password (HKDF does not stretch).
    static let minimumSize = 32
    static let maximumSize = 4096

    /// - Throws: `SecureDictionaryError.credentialUnavailable(name:reason:)` when the
    ///   variable is unset, the file missing or unreadable, or its size out of bounds.
    static func read(named name: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(SecureDictionaryError) -> SecretBytes
    {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw .credentialUnavailable(name: name, reason: "not a valid credential name")
        }
        guard let directory = environment["CREDENTIALS_DIRECTORY"], directory.hasPrefix("/") else {
            throw .credentialUnavailable(name: name, reason: "$CREDENTIALS_DIRECTORY is not set")
        }
        let descriptor = open("\(directory)/\(name)", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard descriptor >= 0 else {
            let reason = errno == ENOENT ? "no such file in $CREDENTIALS_DIRECTORY" : String(cString: strerror(errno))
            throw .credentialUnavailable(name: name, reason: reason)
        }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: maximumSize + 1)
        defer { Wipe.bytes(&buffer) }
        var total = 0
        while total < buffer.count {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + total, $0.count - total) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw .credentialUnavailable(name: name, reason: String(cString: strerror(errno))) }
            if got == 0 { break }
            total += got
        }
        guard total >= minimumSize, total <= maximumSize else {
            throw .credentialUnavailable(
                name: name,
                reason: total > maximumSize
                    ? "larger than \(maximumSize) bytes" : "it holds \(total) bytes; a key needs \(minimumSize) random bytes")
        }
        return buffer.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<total])) }
    }
}
