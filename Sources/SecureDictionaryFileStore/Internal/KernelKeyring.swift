import CFileStoreShim
import SecureDictionary

#if canImport(Glibc)
    import Glibc
#endif

/// Small secrets and records kept by the Linux kernel for the login session: `user` keys in
/// the session keyring (keyrings(7)), as `keyctl add user NAME VALUE @s` makes them.
///
/// ```swift
/// KernelKeyring.store("securedictionary:example", bytes, timeout: .seconds(900))
/// let bytes = KernelKeyring.read("securedictionary:example", capacity: 64)   // SecretBytes?
/// KernelKeyring.revoke("securedictionary:example")
/// ```
///
/// Which keyring: the session keyring this process already has, never a new one, so that
/// the next process of the session finds what this one stored. After an SSH or console
/// login (`pam_keyinit`) that is the login's own keyring; in a container, a service or CI
/// without one, the kernel gives the user's default session keyring, which every process of
/// the user without a session keyring of its own shares. In a container without a user
/// namespace that includes the same uid's processes of other containers on the host: see
/// the README. Keys are readable only by processes that possess them (reach them through
/// their own session keyring); the kernel keeps them out of swap and core dumps.
///
/// Every call fails softly (`nil` or `false`): where the kernel keyring is unavailable
/// (seccomp in Docker's and Flatpak's default profiles answers ENOSYS or EPERM), callers
/// go on without it.
enum KernelKeyring {
    /// The session keyring's serial, or `nil` when the kernel keyring cannot be used.
    static var session: Int32? {
        let serial = sd_keyring_session()
        return serial > 0 ? Int32(truncatingIfNeeded: serial) : nil
    }

    /// Stores `payload` under `description` (replacing a key of that description) and sets
    /// its timeout (`nil`: none). Returns whether it was stored.
    @discardableResult
    static func store(_ description: String, _ payload: UnsafeRawBufferPointer, timeout: Duration?) -> Bool {
        guard let keyring = session else { return false }
        let key = sd_keyring_add(description, payload.baseAddress, payload.count, keyring)
        guard key > 0 else { return false }
        if let timeout {
            let seconds = max(1, timeout.components.seconds + (timeout.components.attoseconds > 0 ? 1 : 0))
            guard sd_keyring_set_timeout(Int32(truncatingIfNeeded: key), UInt32(clamping: seconds)) == 0 else {
                sd_keyring_revoke(Int32(truncatingIfNeeded: key))
                return false
            }
        }
        return true
    }

    /// The payload of the key `description` (at most `capacity` bytes), or `nil` when there
    /// is none this process possesses (none, expired, revoked).
    static func read(_ description: String, capacity: Int) -> SecretBytes? {
        guard let keyring = session else { return nil }
        let key = sd_keyring_search(keyring, description)
        guard key > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: capacity)
        defer { Wipe.bytes(&buffer) }
        let length = buffer.withUnsafeMutableBytes { sd_keyring_read(Int32(truncatingIfNeeded: key), $0.baseAddress, $0.count) }
        guard length >= 0, length <= capacity else { return nil }
        return buffer.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<length])) }
    }

    /// Revokes the key `description` (nobody can read it any more) and unlinks it from the
    /// session keyring. Returns whether there was one.
    @discardableResult
    static func revoke(_ description: String) -> Bool {
        guard let keyring = session else { return false }
        let key = sd_keyring_search(keyring, description)
        guard key > 0 else { return false }
        sd_keyring_revoke(Int32(truncatingIfNeeded: key))
        sd_keyring_unlink(Int32(truncatingIfNeeded: key), keyring)
        return true
    }
}
