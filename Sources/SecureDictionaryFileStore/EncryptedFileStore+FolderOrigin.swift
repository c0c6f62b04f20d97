import FoundationEssentials

/// How an ``EncryptedFileStore``'s folder was chosen. Package-internal: the tool's, not an
/// API promise.
package struct FolderOrigin: Sendable, Equatable {
    /// E.g. `$STATE_DIRECTORY/securedictionary (the unit's StateDirectory=)`.
    package var description: String
    /// What is wrong with the choice, and the fix, or `nil`: set for a systemd service (it has
    /// `$CREDENTIALS_DIRECTORY`) under a credential without `$STATE_DIRECTORY`, whose files
    /// land where its next run (given `StateDirectory=`) or the tool do not look.
    package var warning: String?

    static let given = FolderOrigin(description: "the folder given to the store")
}

extension EncryptedFileStore {
    /// The default folder for `keySource` in `environment` (see `init(folderPath:keySource:)`),
    /// and how it was chosen.
    ///
    /// ```swift
    /// let (path, origin) = EncryptedFileStore.defaultFolder(for: .systemdCredential())
    /// if let warning = origin.warning { print("\(path): \(warning)") }
    /// ```
    static func defaultFolder(
        for keySource: KeySource, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> (path: String, origin: FolderOrigin) {
        let credential = if case .systemdCredential = keySource.kind { true } else { false }
        if credential, let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first, state.hasPrefix("/") {
            let origin = FolderOrigin(description: "$STATE_DIRECTORY/securedictionary (the unit's StateDirectory=)")
            return ("\(state)/securedictionary", origin)
        }
        let data = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/"
        let path = data.map { "\($0)/securedictionary" } ?? "\(home)/.local/share/securedictionary"
        var origin = FolderOrigin(
            description: data == nil ? "$HOME/.local/share/securedictionary" : "$XDG_DATA_HOME/securedictionary")
        if credential, environment["CREDENTIALS_DIRECTORY"]?.hasPrefix("/") == true {
            origin.warning =
                "$STATE_DIRECTORY is unset, so this service keeps its encrypted files in \(path): add "
                + "StateDirectory=NAME to its unit to keep them in /var/lib/NAME/securedictionary"
        }
        return (path, origin)
    }

    /// `path` made absolute from the current folder now, so that the store's folder is the one
    /// meant, whatever the current folder is at the first write (folders are made from `/` down).
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
