import CFileStoreShim
import Glibc
import ProcessSpawning
import SecureDictionary

/// Small secrets and records kept by the Linux kernel for the login session: `user` keys in
/// the session keyring (keyrings(7)), as `keyctl add user NAME VALUE @s` makes them.
///
/// Which keyring: the session keyring this process already has, never a new one, so that the
/// session's next process finds what this one stored (whose keyring that is after a login, in
/// a container or CI: <doc:MachinesWithoutADesktop>). Only processes that possess a key can
/// read it; the kernel keeps keys out of swap and core dumps.
///
/// Every call fails softly (`nil` or `false`), so that callers go on without a kernel keyring
/// (seccomp in Docker's and Flatpak's default profiles answers ENOSYS or EPERM).
enum KernelKeyring {
    /// The session keyring's serial, or `nil` when the kernel keyring cannot be used.
    static var session: Int32? {
        let serial = sd_keyring_session()
        return serial > 0 ? Int32(truncatingIfNeeded: serial) : nil
    }

    /// Stores `payload` under `description` (replacing a key of that description) with its
    /// timeout (`nil`: none). Returns `nil` once stored, else the call's `errno` (`EDQUOT`: this
    /// user's key quota is full; `ENOSYS`, `EPERM`: no kernel keyring here).
    static func failureToStore(_ description: String, _ payload: UnsafeRawBufferPointer, timeout: Duration?) -> Int32? {
        guard let keyring = session else { return errno == 0 ? ENOSYS : errno }
        let key = sd_keyring_add(description, payload.baseAddress, payload.count, keyring)
        guard key > 0 else { return errno }
        if let timeout {
            let seconds = max(1, (timeout.milliseconds + 999) / 1_000)  // whole seconds, rounded up
            guard sd_keyring_set_timeout(Int32(truncatingIfNeeded: key), UInt32(clamping: seconds)) == 0 else {
                let failure = errno
                sd_keyring_revoke(Int32(truncatingIfNeeded: key))
                return failure
            }
        }
        return nil
    }

    /// The payload of the key `description` (at most `capacity` bytes), or `nil` when there
    /// is none this process possesses (none, expired, revoked).
    static func read(_ description: String, capacity: Int) -> SecretBytes? {
        serial(of: description).flatMap { read(serial: $0, capacity: capacity) }
    }

    /// The payload of the key `serial`, through a buffer that is wiped; `nil` when it cannot
    /// be read or holds more than `capacity` bytes.
    static func read(serial: Int32, capacity: Int) -> SecretBytes? {
        var buffer = [UInt8](repeating: 0, count: capacity)
        defer { Wipe.bytes(&buffer) }
        let length = buffer.withUnsafeMutableBytes { sd_keyring_read(serial, $0.baseAddress, $0.count) }
        guard length >= 0, length <= capacity else { return nil }
        return buffer.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<length])) }
    }

    /// Revokes the key `description`, if any (nobody can read it any more), and unlinks it
    /// from the session keyring.
    static func revoke(_ description: String) {
        if let serial = serial(of: description) { revoke(serial: serial) }
    }

    /// The serial of the key `description` that this process possesses, if any.
    private static func serial(of description: String) -> Int32? {
        guard let keyring = session else { return nil }
        let key = sd_keyring_search(keyring, description)
        return key > 0 ? Int32(truncatingIfNeeded: key) : nil
    }

    /// The keys of the session keyring (not of keyrings linked in it) whose description
    /// starts with `prefix`.
    static func keys(withPrefix prefix: String) -> [(serial: Int32, description: String)] {
        guard let keyring = session else { return [] }
        var serials = [Int32](repeating: 0, count: 1024)
        let length = serials.withUnsafeMutableBytes { sd_keyring_read(keyring, $0.baseAddress, $0.count) }
        guard length > 0 else { return [] }
        var found: [(serial: Int32, description: String)] = []
        for serial in serials.prefix(min(length, serials.count * 4) / 4) {
            var text = [CChar](repeating: 0, count: 512)
            let got = text.withUnsafeMutableBufferPointer { sd_keyring_describe(serial, $0.baseAddress, $0.count) }
            guard got > 0, got <= text.count else { continue }
            // "type;uid;gid;perm;description": the description may hold ';' itself.
            let fields = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).split(
                separator: ";", maxSplits: 4, omittingEmptySubsequences: false)
            guard fields.count == 5, fields[0] == "user", fields[4].hasPrefix(prefix) else { continue }
            found.append((serial, String(fields[4])))
        }
        return found
    }

    /// Revokes the key `serial` and unlinks it from the session keyring.
    static func revoke(serial: Int32) {
        sd_keyring_revoke(serial)
        if let keyring = session { sd_keyring_unlink(serial, keyring) }
    }

    /// This user's use of the kernel's key quota (`/proc/key-users`): keys and bytes, each
    /// with its limit (200 keys and 20,000 bytes for a user who is not root, by default).
    struct Quota: Sendable, Equatable {
        var keys: Int
        var maximumKeys: Int
        var bytes: Int
        var maximumBytes: Int

        /// Whether a new key of `size` bytes (description included) no longer fits.
        func isFull(forA size: Int) -> Bool { keys >= maximumKeys || bytes + size > maximumBytes }

        /// E.g. "200 of 200 keys, 4,100 of 20,000 bytes".
        var description: String { "\(keys) of \(maximumKeys) keys, \(bytes) of \(maximumBytes) bytes" }
    }

    /// This user's quota, or `nil` when `/proc/key-users` cannot be read.
    static func quota(of user: uid_t = geteuid()) -> Quota? {
        // "  1000:    12 11/11 9/200 140/20000"
        guard let fields = firstLine(of: "/proc/key-users", where: { $0.count == 5 && $0[0] == "\(user):" }) else { return nil }
        let keys = fields[3].split(separator: "/").compactMap { Int($0) }
        let bytes = fields[4].split(separator: "/").compactMap { Int($0) }
        guard keys.count == 2, bytes.count == 2 else { return nil }
        return Quota(keys: keys[0], maximumKeys: keys[1], bytes: bytes[0], maximumBytes: bytes[1])
    }
}

/// The fields (split at spaces) of the first line of the system file `path` (`/proc/…`) that
/// `matches`; `nil` when none does or the file cannot be read.
func firstLine(of path: String, where matches: ([Substring]) -> Bool) -> [Substring]? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 512)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        if matches(fields) { return fields }
    }
    return nil
}
