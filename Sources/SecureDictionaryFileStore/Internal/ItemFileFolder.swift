import Crypto
import Glibc
import ProcessSpawning
import SecureDictionary
import Synchronization

/// The folder that holds one file per item of an encrypted-file store, and the only code
/// that touches those files.
///
/// ```swift
/// let folder = ItemFileFolder(path: "/home/me/.local/share/securedictionary")
/// let bytes = try folder.withFolder(create: true) { descriptor, identity in
///     try folder.replace(name, in: descriptor, with: encrypted)   // write, fsync, rename, fsync the folder
///     return try folder.read(name, in: descriptor, upTo: EncryptedItemFile.maximumFileSize)   // nil: no file
/// }
/// ```
///
/// Why atomic replacement: a reader (another process) sees the old file or the new one,
/// never half of one, and a crash or full disk leaves the old file in place.
///
/// Every call opens and checks the folder first (`FolderSafety`), then works inside that open
/// folder (`openat`, `renameat`), so the folder checked is the folder used. An item file must
/// be a regular file of this user, never a link.
final class ItemFileFolder: Sendable {
    let path: String
    /// Whether the folders above passed `FolderSafety.checkAncestors(of:)`: once per store,
    /// as ssh checks once per connection.
    private let ancestorsChecked = Atomic<Bool>(false)

    init(path: String) {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        self.path = path
    }

    /// What tells whether two stores share the folder: its real path (as given while the
    /// folder does not exist).
    var place: String {
        guard let real = realpath(path, nil) else { return "the files in \(path)" }
        defer { free(real) }
        return "the files in \(String(cString: real))"
    }

    /// The file name of `item`: a hash of its identity, so any item name makes a short one.
    static func fileName(of item: KeyringItem) -> String {
        hex(SHA256.hash(data: EncryptedItemFile.identity(of: item)).prefix(16)) + ".sdict"
    }

    func filePath(of item: KeyringItem) -> String { "\(path)/\(Self.fileName(of: item))" }

    // MARK: The folder

    /// Runs `body` with the folder open (checked) and what it is, or returns `nil` when there
    /// is no folder yet and `create` is `false`.
    ///
    /// - Throws: ``FileStoreError/unsafePath(path:reason:)`` for a folder someone else
    ///   could swap or write to; ``FileStoreError/fileUnavailable(path:reason:)`` when
    ///   it cannot be opened or created.
    func withFolder<T>(create: Bool, _ body: (Int32, FolderIdentity) throws(SecureDictionaryError) -> T)
        throws(SecureDictionaryError) -> T?
    {
        if !ancestorsChecked.load(ordering: .acquiring) {
            try FolderSafety.checkAncestors(of: path)
            ancestorsChecked.store(true, ordering: .releasing)
        }
        var descriptor = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if descriptor < 0 && errno == ENOENT {
            guard create else { return nil }
            var prefix = ""  // the folder (mode 0700) and its parents, as needed
            for component in path.split(separator: "/") {
                prefix += "/" + component
                if mkdir(prefix, 0o700) != 0, errno != EEXIST { throw .unusable(prefix) }
            }
            descriptor = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        }
        guard descriptor >= 0 else { throw FolderSafety.openFailure(path, errno: errno) }
        defer { close(descriptor) }
        return try body(descriptor, try FolderSafety.checkFolder(descriptor, path: path))
    }

    /// The rollback record of the file `name` in the open folder `identity`: keyed by what
    /// the folder is (device and inode), not by how `path` spells it.
    func record(of name: String, in identity: FolderIdentity) -> GenerationRecord {
        GenerationRecord(folder: identity, file: name, folderPath: path)
    }

    // MARK: Item files

    /// The first `limit` bytes of the file `name` of the open folder; `nil` when there is none.
    /// A file above `EncryptedItemFile.maximumFileSize` is `SecureDictionaryError.tooLarge(size:limit:)`
    /// unless `limit` is below it (a header read).
    ///
    /// - Throws: ``FileStoreError/unsafePath(path:reason:)`` for a link or another user's
    ///   file; ``FileStoreError/fileUnavailable(path:reason:)`` when it cannot be read.
    func read(_ name: String, in folder: Int32, upTo limit: Int) throws(SecureDictionaryError) -> [UInt8]? {
        let file = "\(path)/\(name)"
        let descriptor = openat(folder, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if descriptor < 0 {
            if errno == ENOENT { return nil }
            throw .unusable(file, ifLink: "the item file is a symbolic link: remove the link")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .unusable(file) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw .unsafePath(path: file, reason: "the item file is not a regular file: remove it")
        }
        guard status.st_uid == geteuid() else {
            throw .unsafePath(path: file, reason: "the item file belongs to uid \(status.st_uid), not to this user: remove it")
        }
        let size = Int(status.st_size)
        if size > EncryptedItemFile.maximumFileSize && limit >= EncryptedItemFile.maximumFileSize {
            throw .tooLarge(size: size, limit: EncryptedItemFile.maximumFileSize)
        }
        var bytes = [UInt8](repeating: 0, count: min(size, limit))
        guard let total = readFully(descriptor, into: &bytes) else { throw .unusable(file) }
        bytes.removeLast(bytes.count - total)  // shrank meanwhile: it was replaced, never truncated
        return bytes
    }

    /// Writes `bytes` as the file `name` of the open folder: to a new file beside it (mode
    /// 0600), flushed, renamed over the old one, and the folder flushed (a durable rename).
    ///
    /// - Throws: ``FileStoreError/fileUnavailable(path:reason:)`` when the folder cannot be
    ///   written (full disk, read-only); the old file is then unchanged.
    func replace(_ name: String, in folder: Int32, with bytes: [UInt8]) throws(SecureDictionaryError) {
        let target = "\(path)/\(name)"
        let temporary = ".\(name).\(UInt64.random(in: .min ... .max)).tmp"
        let descriptor = openat(folder, temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw .unusable("\(path)/\(temporary)") }
        var written = 0
        while written < bytes.count {
            let put = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + written, bytes.count - written) }
            if put < 0, errno == EINTR { continue }
            guard put > 0 else { break }
            written += put
        }
        let failed = written < bytes.count || fsync(descriptor) != 0
        let error = errno
        close(descriptor)
        guard !failed, renameat(folder, temporary, folder, name) == 0 else {
            let reason = String(cString: strerror(failed ? error : errno))
            unlinkat(folder, temporary, 0)
            throw .fileUnavailable(path: target, reason: reason)
        }
        fsync(folder)
    }

    /// Removes the temporaries of writers killed mid-write (`FileStoreLock`'s "nothing left
    /// behind"): `replace(_:in:with:)`'s exact pattern, regular files of this user only.
    /// Failures are ignored: nothing depends on it.
    func removeTemporaries(in folder: Int32) {
        for name in Self.names(in: folder) where name.wholeMatch(of: /\.[0-9a-f]{32}\.sdict\.[0-9]{1,20}\.tmp/) != nil {
            var status = stat()
            guard fstatat(folder, name, &status, AT_SYMLINK_NOFOLLOW) == 0, status.st_mode & S_IFMT == S_IFREG,
                status.st_uid == geteuid()
            else { continue }
            unlinkat(folder, name, 0)
        }
    }

    /// Removes `item`'s file; returns whether there was one.
    func remove(_ item: KeyringItem) throws(SecureDictionaryError) -> Bool {
        try withFolder(create: false) { folder, _ throws(SecureDictionaryError) -> Bool in
            if unlinkat(folder, Self.fileName(of: item), 0) == 0 {
                fsync(folder)
                return true
            }
            if errno == ENOENT { return false }
            throw .unusable(filePath(of: item))
        } ?? false
    }

    /// The names of the item files (`*.sdict`) in the open folder.
    func itemFileNames(in folder: Int32) -> [String] {
        Self.names(in: folder).filter { $0.hasSuffix(".sdict") && !$0.hasPrefix(".") }.sorted()
    }

    /// Every name in the open folder (through a copy of its descriptor); none if unlistable.
    private static func names(in folder: Int32) -> [String] {
        let copy = dup(folder)
        guard copy >= 0, let listing = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return []
        }
        defer { closedir(listing) }
        return DirectoryEntries.names(in: listing)
    }

    /// The headers of the item files, unverified (listing needs no key); files that cannot be
    /// read or parsed are left out.
    func headers() throws(SecureDictionaryError) -> [(name: String, header: EncryptedItemFile.Header)] {
        try withFolder(create: false) { folder, _ in
            itemFileNames(in: folder).compactMap { name -> (name: String, header: EncryptedItemFile.Header)? in
                guard let bytes = try? read(name, in: folder, upTo: EncryptedItemFile.maximumHeaderSize),
                    let header = try? EncryptedItemFile.header(of: bytes)
                else { return nil }
                return (name, header)
            }
        } ?? []
    }

    /// The items of the files that are under their own item's name, with their headers: a file
    /// moved or renamed by hand holds another item than its name says, which a read of
    /// neither item opens, so no listing shows it.
    func items() throws(SecureDictionaryError) -> [(item: KeyringItem, header: EncryptedItemFile.Header)] {
        try headers().compactMap { file in
            guard let item = try? file.header.item(), Self.fileName(of: item) == file.name else { return nil }
            return (item, file.header)
        }
    }
}

extension SecureDictionaryError {
    /// `fileUnavailable` for `path`, its reason from `errno`; after an `O_NOFOLLOW` open that
    /// met a link (`ELOOP`), `unsafePath` with `ifLink` as the reason, when given.
    static func unusable(_ path: String, ifLink: String? = nil) -> Self {
        if let ifLink, errno == ELOOP { return .unsafePath(path: path, reason: ifLink) }
        return .fileUnavailable(path: path, reason: String(cString: strerror(errno)))
    }
}

/// Reads `descriptor` into `buffer` until it is full or the file ends: how many bytes came,
/// or `nil` on an error (`errno` says which).
func readFully(_ descriptor: Int32, into buffer: inout [UInt8]) -> Int? {
    var total = 0
    while total < buffer.count {
        let got = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + total, $0.count - total) }
        if got < 0, errno == EINTR { continue }
        guard got > 0 else { return got == 0 ? total : nil }
        total += got
    }
    return total
}

/// `bytes` in lowercase hexadecimal, two digits each.
func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}
