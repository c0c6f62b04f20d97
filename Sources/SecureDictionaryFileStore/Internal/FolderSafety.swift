import Glibc
import SecureDictionary

/// Whether a folder may hold an encrypted-file store, checked as OpenSSH checks `~/.ssh`
/// (`StrictModes`): the folder is no symbolic link, belongs to this user, and nobody else
/// may write to it; every folder above it belongs to root or this user and nobody else may
/// write to it, unless it is sticky (as `/tmp`), where others cannot rename what is ours.
///
/// Why: whoever can write to the folder, or to one above it, can swap the files (or the
/// whole folder) for their own, roll them back, or break the writers' lock; a folder
/// reached through a link is wherever the link's owner points it.
enum FolderSafety {
    /// Checks the open store folder `descriptor` (opened with `O_NOFOLLOW`); returns what it is.
    static func checkFolder(_ descriptor: Int32, path: String) throws(SecureDictionaryError) -> FolderIdentity {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw .unusable(path) }
        try check(status, path: path, isStoreFolder: true)
        return FolderIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    /// The error for a store folder that `open` refused with `errno`.
    static func openFailure(_ path: String, errno: Int32) -> SecureDictionaryError {
        var status = stat()
        if errno == ELOOP || (lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK) {
            return .unsafePath(path: path, reason: "it is a symbolic link: give the store the real folder's path")
        }
        if errno == ENOTDIR {
            return .unsafePath(path: path, reason: "it is not a folder: remove it, or give the store another folder")
        }
        return .fileUnavailable(path: path, reason: String(cString: strerror(errno)))
    }

    /// Checks every folder above `path`, from `/` down, after resolving links in them (a
    /// link such as `/var/run` → `/run` is the system's; the store folder itself may not be
    /// one). Folders that do not exist yet are created later with mode 0700.
    static func checkAncestors(of path: String) throws(SecureDictionaryError) {
        // The deepest ancestor that exists: the others will be made by the store.
        var existing = parentFolder(of: path)
        while access(existing, F_OK) != 0, existing != "/", existing != "." { existing = parentFolder(of: existing) }
        guard let resolved = realpath(existing, nil) else { throw .unusable(existing) }
        let real = String(cString: resolved)
        free(resolved)
        let components = real.split(separator: "/")
        for count in 0...components.count {
            let prefix = "/" + components.prefix(count).joined(separator: "/")
            var status = stat()
            guard stat(prefix, &status) == 0 else { throw .unusable(prefix) }
            try check(status, path: prefix, isStoreFolder: false)
        }
    }

    private static func check(_ status: stat, path: String, isStoreFolder: Bool) throws(SecureDictionaryError) {
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw .unsafePath(path: path, reason: "it is not a folder: remove it, or give the store another folder")
        }
        let user = geteuid()
        let owner = status.st_uid
        let mode = status.st_mode & 0o7777
        let octal = "0" + String(mode & 0o777, radix: 8)
        if isStoreFolder {
            guard owner == user else {
                throw .unsafePath(
                    path: path, reason: "it belongs to uid \(owner), not to this user (uid \(user)): use a folder of your own")
            }
            guard mode & 0o022 == 0 else {
                throw .unsafePath(path: path, reason: "others may write to it (mode \(octal)): run 'chmod 700' on it")
            }
            return
        }
        guard owner == user || owner == 0 else {
            throw .unsafePath(
                path: path,
                reason: "uid \(owner) owns this folder above the store's and could swap it: move the store elsewhere")
        }
        guard mode & 0o022 == 0 || mode & S_ISVTX != 0 else {
            throw .unsafePath(
                path: path,
                reason: "others may write to this folder above the store's (mode \(octal)) and swap it: run 'chmod go-w' on it")
        }
    }
}

/// The folder that holds `path`: `/` at the top of an absolute path, `.` of a relative one.
func parentFolder(of path: String) -> String {
    let parent = path.split(separator: "/").dropLast().joined(separator: "/")
    return path.hasPrefix("/") ? "/" + parent : (parent.isEmpty ? "." : parent)
}
