import FoundationEssentials
import Glibc
import ProcessSpawning

/// Where a running gnome-keyring keeps its keyring, from the variables it was started with,
/// so that `doctor`'s fix for a locked keyring acts on that keyring and not on the one of the
/// shell that runs `doctor`.
///
/// ```swift
/// let folders = KeyringDaemonFolders.of(pid: 4242)
/// folders.unlockCommand(from: ProcessInfo.processInfo.environment)
/// // env XDG_RUNTIME_DIR=/tmp/sd-keyring.x/runtime XDG_DATA_HOME=/ci/secure-dict-keyring/data …
/// //     gnome-keyring-daemon --replace --unlock --components=secrets < /ci/secure-dict-keyring/keyring-password
/// ```
///
/// Why: in a second shell joined to `secure-dict keyring run --keep DIR` (only its
/// `DBUS_SESSION_BUS_ADDRESS` exported), a bare `gnome-keyring-daemon --replace --unlock`
/// replaced the session's keyring with one on the home folder's keyring files, after which
/// `list` showed nothing. With the session's variables the new daemon opens the session's files
/// (and carries its `XDG_RUNTIME_DIR`, so the session stops it at its end).
struct KeyringDaemonFolders: Equatable {
    /// The variables that decide which keyring files gnome-keyring opens and where its control
    /// socket is.
    static let names = ["XDG_RUNTIME_DIR", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "HOME"]

    /// Those of ``names`` the daemon has, with its values.
    var variables: [String: String]

    /// A daemon's started from a shell with `environment` (when the running one's cannot be read).
    init(startedFrom environment: [String: String]) {
        variables = environment.filter { Self.names.contains($0.key) }
    }

    init(variables: [String: String]) { self.variables = variables }

    /// The daemon's, from `/proc/PID/environ` (the variables it was started with); `nil` when
    /// they cannot be read.
    static func of(pid: Int) -> KeyringDaemonFolders? {
        guard let file = try? FileDescriptor.open("/proc/\(pid)/environ", O_RDONLY) else { return nil }
        defer { try? file.close() }
        guard let bytes = try? file.readToEnd() else { return nil }
        var variables: [String: String] = [:]
        // Only these names are kept: the rest of a process's environment may hold secrets.
        for entry in bytes.split(separator: 0) {
            let text = String(decoding: entry, as: UTF8.self)
            guard let equals = text.firstIndex(of: "=") else { continue }
            let name = String(text[..<equals])
            if names.contains(name) { variables[name] = String(text[text.index(after: equals)...]) }
        }
        return KeyringDaemonFolders(variables: variables)
    }

    /// The variables to change for a daemon started from a shell with `ours` to open the
    /// running one's files, in ``names`` order: a value to set, or `nil` to unset one the shell
    /// has and the daemon has not.
    func differences(from ours: [String: String]) -> [(name: String, value: String?)] {
        Self.names.compactMap { name in
            variables[name] == ours[name] ? nil : (name, variables[name])
        }
    }

    /// The keyring's password file of a `secure-dict keyring run` session (`STATE/keyring-password`
    /// beside its `STATE/data`), when the daemon is one and the file is there.
    var sessionPasswordFile: String? {
        guard let data = variables["XDG_DATA_HOME"], data.hasSuffix("/data") else { return nil }
        let file = String(data.dropLast("/data".count)) + "/keyring-password"
        return access(file, R_OK) == 0 ? file : nil
    }

    /// The command that unlocks this daemon's keyring from a shell with `ours` as its
    /// environment: gnome-keyring's `--replace --unlock` with the daemon's folders, reading the
    /// password from the session's file when there is one (else `$SECURE_DICT_KEYRING_PASSWORD_FILE`,
    /// else standard input).
    func unlockCommand(from ours: [String: String]) -> String {
        let assignments = differences(from: ours).map { name, value in
            value.map { shellQuoted("\(name)=\($0)") } ?? "-u \(name)"
        }
        let command =
            (assignments.isEmpty ? "" : "env \(assignments.joined(separator: " ")) ")
            + "gnome-keyring-daemon --replace --unlock --components=secrets"
        if let password = sessionPasswordFile ?? ours["SECURE_DICT_KEYRING_PASSWORD_FILE"].flatMap({ $0.isEmpty ? nil : $0 }) {
            return "\(command) < \(shellQuoted(password))"
        }
        return "\(command) (it reads the password on standard input)"
    }
}
