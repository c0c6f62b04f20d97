#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// How an ``EncryptedFileStore``'s folder was chosen. Package-internal: the tool's, not an
/// API promise.
package struct FolderOrigin: Sendable, Equatable {
    /// E.g. `$STATE_DIRECTORY/securedictionary (the unit's StateDirectory=)`.
    package var description: String
    /// What is wrong with the choice, and the fix, or `nil`: set for a systemd service (it has
    /// `$CREDENTIALS_DIRECTORY`) under a credential without `$STATE_DIRECTORY`, whose files
    /// land where its next run (given `StateDirectory=`) or the tool do not look.
    package var warning: String?
}

extension EncryptedFileStore {
    /// How the folder is chosen for `keySource` when `given` is `nil` (see
    /// `init(folderPath:keySource:)`), in `environment`.
    ///
    /// ```swift
    /// let origin = EncryptedFileStore.folderOrigin(given: nil, for: .systemdCredential())
    /// if let warning = origin.warning { print(warning) }
    /// ```
    static func folderOrigin(
        given: String?, for keySource: KeySource, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> FolderOrigin {
        if given != nil { return FolderOrigin(description: "the folder given to the store") }
        if stateFolder(for: keySource, in: environment) != nil {
            return FolderOrigin(description: "$STATE_DIRECTORY/securedictionary (the unit's StateDirectory=)")
        }
        let data = environment["XDG_DATA_HOME"]?.hasPrefix("/") == true
        let description = data ? "$XDG_DATA_HOME/securedictionary" : "$HOME/.local/share/securedictionary"
        guard case .systemdCredential = keySource.kind, environment["CREDENTIALS_DIRECTORY"]?.hasPrefix("/") == true else {
            return FolderOrigin(description: description)
        }
        let path = defaultFolderPath(for: keySource, environment: environment)
        return FolderOrigin(
            description: description,
            warning: "$STATE_DIRECTORY is unset, so this service keeps its encrypted files in \(path): add "
                + "StateDirectory=NAME to its unit to keep them in /var/lib/NAME/securedictionary")
    }

    /// The default folder for `keySource` in `environment` (see `init(folderPath:keySource:)`).
    static func defaultFolderPath(
        for keySource: KeySource, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String {
        if let state = stateFolder(for: keySource, in: environment) { return "\(state)/securedictionary" }
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return "\(data)/securedictionary" }
        let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/"
        return "\(home)/.local/share/securedictionary"
    }

    /// `path` made absolute from the current folder now, so that the store's folder is the one
    /// meant, whatever the current folder is at the first write (folders are made from `/` down).
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    /// The first folder of `$STATE_DIRECTORY`, for a systemd credential only.
    private static func stateFolder(for keySource: KeySource, in environment: [String: String]) -> Substring? {
        guard case .systemdCredential = keySource.kind, let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first,
            state.hasPrefix("/")
        else { return nil }
        return state
    }
}
