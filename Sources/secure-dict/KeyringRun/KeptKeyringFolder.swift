import FoundationEssentials
import Glibc

/// Where `secure-dict keyring run --keep DIR` keeps its keyring: a private subfolder of DIR,
/// `DIR/secure-dict-keyring`, which holds the keyring's files, its password and the lock that
/// allows one run at a time.
///
/// DIR itself is never changed: it is made (mode 0700) when it does not exist, and otherwise
/// left as it is: a shared folder (mode 1777) must not be made private, nor the password
/// dropped into it.
struct KeptKeyringFolder {
    static let subfolder = "secure-dict-keyring"

    /// DIR, absolute.
    let given: String
    var path: String { "\(given)/\(Self.subfolder)" }
    /// The session bus of the run that holds the folder, for a second shell to join it.
    var running: String { "\(path)/running" }
    var password: String { "\(path)/keyring-password" }

    init(_ keep: String) {
        given = keep.hasPrefix("/") ? keep : FileManager.default.currentDirectoryPath + "/" + keep
    }

    /// Makes DIR if needed and the private subfolder, and moves in a keyring that an earlier
    /// version kept in DIR itself.
    func prepare() throws(PrivateKeyringSession.Failure) {
        var info = stat()
        if lstat(given, &info) != 0 {
            do {
                try FileManager.default.createDirectory(
                    atPath: given, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw .init(message: "cannot make \(given): \(error)")
            }
        }
        if mkdir(path, 0o700) != 0 {
            guard errno == EEXIST else { throw .init(message: "cannot make \(path): \(String(cString: strerror(errno)))") }
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid() else {
                throw .init(message: "\(path) is not a folder of yours: remove it, or give --keep another folder")
            }
            chmod(path, 0o700)  // its own subfolder, never DIR
        }
        // An earlier version kept the keyring and its password in DIR itself.
        if access("\(given)/keyring-password", F_OK) == 0, access(password, F_OK) != 0 {
            rename("\(given)/keyring-password", password)
            if access("\(path)/data", F_OK) != 0 { rename("\(given)/data", "\(path)/data") }
        }
    }

    /// Takes the folder's lock (two daemons on the same keyring files would overwrite each
    /// other); returns its descriptor, which holds it until closed.
    ///
    /// - Throws: when another run holds it, the variable a second shell exports to use that
    ///   run's keyring ("in use" alone gives the user no way on).
    func lock() throws(PrivateKeyringSession.Failure) -> Int32 {
        let descriptor = open("\(path)/.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .init(message: "cannot open \(path)/.lock: \(String(cString: strerror(errno)))") }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            let address = FileManager.default.contents(atPath: running).map {
                String(decoding: $0, as: UTF8.self).trimmingWhitespace(andNewlines: true)
            }
            let join = address.map {
                ": to use its keyring from another shell, export DBUS_SESSION_BUS_ADDRESS=\(shellQuoted($0)) "
                    + "(the keyring's password is in \(password))"
            }
            throw .init(message: "\(given) is in use by another 'secure-dict keyring run'\(join ?? "")")
        }
        return descriptor
    }

    /// Records the run's session bus, for a second shell (written whole, then renamed).
    func announce(busAddress: String) {
        let temporary = "\(running).new"
        guard FileManager.default.createFile(atPath: temporary, contents: Data("\(busAddress)\n".utf8)) else { return }
        rename(temporary, running)
    }

    /// Removes the record of the run.
    func forget() { unlink(running) }
}
