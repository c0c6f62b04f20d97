import SecureDictionary

/// What an ``AutomaticStore`` chose last, kept in the folder of its file store: a file whose
/// first line is `keyring` or `files`, and then what it means, for a person who finds it.
///
/// Why a record: see the rules in AutomaticStore+Choice.swift. Why in the file store's own
/// folder: the record belongs to that configuration, lives and goes with its files, and is
/// checked as they are (`ItemFileFolder`).
struct AutomaticStoreRecord: Sendable {
    static let fileName = "automatic-store-choice"

    let folder: ItemFileFolder

    init(folderPath: String) { folder = ItemFileFolder(path: folderPath) }

    var path: String { "\(folder.path)/\(Self.fileName)" }

    /// What was recorded: ``AutomaticStore/Chosen/secretService`` or
    /// ``AutomaticStore/Chosen/encryptedFiles``; `nil` when nothing was (or it reads as neither).
    func read() throws(SecureDictionaryError) -> AutomaticStore.Chosen? {
        let bytes = try folder.withFolder(create: false) { descriptor, _ throws(SecureDictionaryError) in
            try folder.read(Self.fileName, in: descriptor, upTo: 4_096)
        }
        guard let bytes = bytes ?? nil else { return nil }
        switch String(decoding: bytes, as: UTF8.self).split(separator: "\n").first {
        case "keyring": return .secretService
        case "files": return .encryptedFiles
        default: return nil
        }
    }

    /// Records `chosen` (the folder is made if needed).
    func write(_ chosen: AutomaticStore.Chosen) throws(SecureDictionaryError) {
        let text =
            chosen == .secretService
            ? """
            keyring
            AutomaticStore chose the Secret Service for the dictionaries of the encrypted-file store in this folder.
            While this file says so, a session bus where no Secret Service runs is an error, never a switch to these files.
            Remove this file to let AutomaticStore use the files when no Secret Service runs.

            """
            : """
            files
            AutomaticStore chose the encrypted files of this folder: where no Secret Service runs, they are used at once.

            """
        _ = try folder.withFolder(create: true) { descriptor, _ throws(SecureDictionaryError) in
            try folder.replace(Self.fileName, in: descriptor, with: Array(text.utf8))
        }
    }
}
