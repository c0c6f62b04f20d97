import Crypto
import SecureDictionary

#if canImport(Glibc)
    import Glibc
#endif

/// The folder that holds one file per item on the Secret portal path, and the only code
/// that touches those files.
///
/// ```swift
/// let folder = ItemFileFolder(path: "/home/me/.var/app/org.example.App/data/securedictionary")
/// try folder.replace(item, with: encrypted)      // write, fsync, rename, fsync the folder
/// let bytes = try folder.read(item)               // nil when there is no file
/// ```
///
/// Why atomic replacement: a reader (another process of the app) sees the old file or the
/// new one, never half of one, and a crash or full disk leaves the old file in place.
struct ItemFileFolder: Sendable {
    let path: String

    /// The file of `item`: a hash of its identity, so that any item name makes a valid,
    /// short file name.
    func filePath(of item: KeyringItem) -> String {
        "\(path)/\(Self.fileStem(of: item)).sdict"
    }

    /// The lock file of `item`, beside its file.
    func lockPath(of item: KeyringItem) -> String {
        "\(path)/\(Self.fileStem(of: item)).lock"
    }

    static func fileStem(of item: KeyringItem) -> String {
        SHA256.hash(data: EncryptedItemFile.identity(of: item)).prefix(16).map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

    /// The bytes of `item`'s file, or `nil` when there is none.
    ///
    /// - Throws: ``SecureDictionaryError/tooLarge(size:limit:)`` for a file larger than any
    ///   dictionary (not read); ``SecureDictionaryError/fileUnavailable(path:reason:)`` when
    ///   the file cannot be read.
    func read(_ item: KeyringItem) throws(SecureDictionaryError) -> [UInt8]? {
        let file = filePath(of: item)
        let descriptor = Glibc.open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        if descriptor < 0 {
            if errno == ENOENT { return nil }
            throw unusable(file)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw unusable(file) }
        let size = Int(status.st_size)
        guard size <= EncryptedItemFile.maximumFileSize else {
            throw .tooLarge(size: size, limit: EncryptedItemFile.maximumFileSize)
        }
        var bytes = [UInt8](repeating: 0, count: size)
        var total = 0
        while total < size {
            let got = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + total, size - total) }
            if got < 0, errno == EINTR { continue }
            guard got >= 0 else { throw unusable(file) }
            if got == 0 { break }  // shrank meanwhile: it was replaced, never truncated
            total += got
        }
        if total < size { bytes.removeLast(size - total) }
        return bytes
    }

    /// Writes `bytes` as `item`'s file: to a new file beside it (mode 0600), flushed to disk,
    /// then renamed over the old one, and the folder flushed so the rename is durable.
    ///
    /// - Throws: ``SecureDictionaryError/fileUnavailable(path:reason:)`` when the folder
    ///   cannot be created or written (full disk, read-only); the old file is then unchanged.
    func replace(_ item: KeyringItem, with bytes: [UInt8]) throws(SecureDictionaryError) {
        try createFolder()
        let target = filePath(of: item)
        let temporary = "\(path)/.\(Self.fileStem(of: item)).\(UInt64.random(in: .min ... .max)).tmp"
        let descriptor = Glibc.open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw unusable(temporary) }
        var written = 0
        var failed = false
        while written < bytes.count {
            let put = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, bytes.count - written) }
            if put < 0, errno == EINTR { continue }
            if put <= 0 {
                failed = true
                break
            }
            written += put
        }
        if !failed, fsync(descriptor) != 0 { failed = true }
        let error = errno
        close(descriptor)
        guard !failed, rename(temporary, target) == 0 else {
            let reason = String(cString: strerror(failed ? error : errno))
            unlink(temporary)
            throw .fileUnavailable(path: target, reason: reason)
        }
        syncFolder()
    }

    /// Removes `item`'s file; returns whether there was one.
    func remove(_ item: KeyringItem) throws(SecureDictionaryError) -> Bool {
        let file = filePath(of: item)
        if unlink(file) == 0 {
            syncFolder()
            return true
        }
        if errno == ENOENT { return false }
        throw unusable(file)
    }

    /// The identities in the headers of every item file, unverified (listing needs no key).
    func identities() -> [(alias: String, applicationID: String, dictionaryName: String)] {
        guard let folder = opendir(path) else { return [] }
        defer { closedir(folder) }
        var found: [(alias: String, applicationID: String, dictionaryName: String)] = []
        while let entry = readdir(folder) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            guard name.hasSuffix(".sdict"), !name.hasPrefix(".") else { continue }
            if let header = readHeader("\(path)/\(name)"), let identity = EncryptedItemFile.identity(inHeaderOf: header) {
                found.append(identity)
            }
        }
        return found
    }

    // MARK: Helpers

    /// The first bytes of a file: enough for any header.
    private func readHeader(_ file: String) -> [UInt8]? {
        let descriptor = Glibc.open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let got = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress!, $0.count) }
        guard got > 0 else { return nil }
        return Array(bytes[..<got])
    }

    /// Creates the folder (mode 0700) and its parents as needed.
    func createFolder() throws(SecureDictionaryError) {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0, errno != EEXIST { throw unusable(prefix) }
        }
    }

    private func syncFolder() {
        let descriptor = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    /// The error for `file`, from `errno`.
    private func unusable(_ file: String) -> SecureDictionaryError {
        .fileUnavailable(path: file, reason: String(cString: strerror(errno)))
    }
}
