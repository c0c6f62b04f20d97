package import SecureDictionary

/// What `secure-dict doctor` reports about an encrypted-file store, found without asking
/// for a passphrase. Package-internal: the tool's, not an API promise.
package struct FileStoreDiagnosis: Sendable {
    /// Why the folder cannot be used, or `nil` when it can (or does not exist yet).
    package var folderProblem: SecureDictionaryError?
    package var folderExists = false
    /// The dictionaries' files in the folder.
    package var fileCount = 0
    /// Why the key cannot be had without a person: a missing credential, or no sandbox for
    /// the Secret portal (inside one it is not asked: it may show a dialog). `nil` otherwise.
    package var keyProblem: SecureDictionaryError?
    /// For a passphrase: whether the session's kernel keyring keeps it now (the next call
    /// asks for it when not). `nil` for other sources, or when the folder has no file yet.
    package var passphraseKept: Bool?
    /// `KernelGenerationTable.problem()`: why an old copy put back would go unnoticed by the
    /// next process now; `nil` when it would not.
    package var rollbackRecordProblem: String?
    /// How the folder was chosen, and the fix for a service without `StateDirectory=`.
    package var folderOrigin: FolderOrigin
}

extension EncryptedFileStore {
    /// Checks the folder, counts the files, and looks for the key without a prompt.
    package func diagnose() -> FileStoreDiagnosis {
        var diagnosis = FileStoreDiagnosis(rollbackRecordProblem: KernelGenerationTable.problem(), folderOrigin: folderOrigin)
        do {
            let count = try folder.withFolder(create: false) { descriptor, _ in
                folder.itemFileNames(in: descriptor).count
            }
            diagnosis.folderExists = count != nil
            diagnosis.fileCount = count ?? 0
        } catch {
            diagnosis.folderProblem = error
        }
        do throws(SecureDictionaryError) {
            switch keySource.kind {
            case .systemdCredential(let name): _ = try SystemdCredential.read(named: name)
            case .secretPortal: try SecretPortal.requireSandbox()
            case .passphrase:
                let parameters = (try? folder.headers())?.lazy.compactMap { $0.header.key?.scrypt }.first
                diagnosis.passphraseKept = parameters.map {
                    KernelKeyring.read(PassphraseKeySource.cacheDescription($0), capacity: 64) != nil
                }
            }
        } catch {
            diagnosis.keyProblem = error
        }
        return diagnosis
    }
}
