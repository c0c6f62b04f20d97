import FoundationEssentials
import SecureDictionary
import SecureDictionaryFileStore

/// `secure-dict doctor`'s first finding: which store this command would use, and why; and,
/// for encrypted files, their folder and key.
extension DoctorReport {
    /// What `--store` resolves to, in `doctor --json`.
    struct StoreState: Encodable {
        /// keyring, credential, passphrase, portal or auto.
        var option: String
        /// secretService, secretPortal or encryptedFiles (after `auto`: what was chosen).
        var chosen: String?
        var reason: String?
        var folder: String?
        var key: String?
    }

    /// Reports the store; returns whether it is the Secret Service (whose checks follow).
    mutating func checkStore(_ storage: StoreOptions, options: SecureDictionary.Options) -> Bool {
        let option = storage.kind.rawValue
        var store = options.store
        var reason: String
        switch store {
        case let automatic as AutomaticStore:
            do {
                let choice = try automatic.choose(timeout: options.timeout)
                reason = "--store auto chose it: \(choice.reason)"
                store = Self.chosenStore(automatic, choice)
            } catch {
                self.store = StoreState(option: option)
                // One problem with one fix (the message's own): add a file store, or pick one.
                findings.append(DoctorFinding(check: "store", status: .problem, detail: message(for: error, hint: nil)))
                return false
            }
        default:
            reason = storage.store == nil && storage.kind == .keyring ? "the default" : "--store \(option)"
        }
        switch store {
        case is SecretServiceStore:
            self.store = StoreState(option: option, chosen: "secretService", reason: reason)
            findings.append(DoctorFinding(check: "store", status: .ok, detail: "the Secret Service (\(reason))"))
            return true
        case let files as EncryptedFileStore where files.keySource != .secretPortal:
            self.store = StoreState(
                option: option, chosen: "encryptedFiles", reason: reason, folder: files.folderPath,
                key: files.keySource.description)
            findings.append(
                DoctorFinding(
                    check: "store", status: .ok,
                    detail: "encrypted files in \(files.folderPath), under a \(files.keySource) (\(reason))"))
            findings += Self.fileStoreFindings(files, credential: storage.credential)
            return false
        default:
            self.store = StoreState(option: option, chosen: "secretPortal", reason: reason, folder: nil)
            findings.append(
                DoctorFinding(check: "store", status: .ok, detail: "the Secret portal's encrypted files (\(reason))"))
            return false
        }
    }

    private static func chosenStore(_ automatic: AutomaticStore, _ choice: AutomaticStore.Choice) -> any KeyringStore {
        switch choice.chosen {
        case .secretService: SecretServiceStore.shared
        case .secretPortal: EncryptedFileStore.secretPortal
        case .encryptedFiles: automatic.fileStore!
        }
    }

    /// The folder and the key of encrypted files, found without a prompt.
    private static func fileStoreFindings(_ files: EncryptedFileStore, credential: String) -> [DoctorFinding] {
        let diagnosis = files.diagnose()
        var findings: [DoctorFinding] = []
        if let problem = diagnosis.folderProblem {
            findings.append(DoctorFinding(check: "folder", status: .problem, detail: problem.description))
        } else if let warning = diagnosis.folderOrigin.warning {
            findings.append(DoctorFinding(check: "folder", status: .problem, detail: warning))
        } else if diagnosis.folderExists {
            findings.append(
                DoctorFinding(
                    check: "folder", status: .ok,
                    detail: "\(files.folderPath) (\(diagnosis.folderOrigin.description)): yours, nobody else may write to "
                        + "it; \(diagnosis.fileCount) dictionary file(s)"))
        } else {
            findings.append(
                DoctorFinding(
                    check: "folder", status: .note,
                    detail: "\(files.folderPath) (\(diagnosis.folderOrigin.description)) does not exist yet: the first "
                        + "write makes it (mode 0700)"))
        }
        if let problem = diagnosis.rollbackRecordProblem {
            findings.append(
                DoctorFinding(
                    check: "rollback record", status: .note,
                    detail: "\(problem): an old copy of a file put back goes unnoticed by the next process"))
        }
        if let problem = diagnosis.keyProblem {
            // Only a missing credential needs the steps below; the error's own sentence names
            // the fix for one that is there but wrong (a wrong size: make a new one).
            let directory = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"]
            let missing = directory.map { !FileManager.default.fileExists(atPath: "\($0)/\(credential)") } ?? true
            findings.append(
                DoctorFinding(
                    check: "key", status: .problem, detail: problem.description,
                    fix: missing
                        ? "make the credential once: head -c 32 /dev/urandom | systemd-creds encrypt --name=\(credential) - "
                            + "/etc/credstore.encrypted/\(credential); then give the service "
                            + "LoadCredentialEncrypted=\(credential) (see the README)"
                        : nil))
        } else {
            switch diagnosis.passphraseKept {
            case true?:
                findings.append(
                    DoctorFinding(check: "key", status: .ok, detail: "the passphrase is kept in this session's kernel keyring"))
            case false?:
                findings.append(
                    DoctorFinding(
                        check: "key", status: .note,
                        detail: "the passphrase is not kept now: the next command asks for it on the terminal"))
            case nil where files.keySource.description.hasPrefix("passphrase"):
                findings.append(
                    DoctorFinding(
                        check: "key", status: .note, detail: "no file yet: the first write asks for a new passphrase, twice"))
            case nil:
                findings.append(DoctorFinding(check: "key", status: .ok, detail: "\(files.keySource) is there"))
            }
        }
        return findings
    }
}
