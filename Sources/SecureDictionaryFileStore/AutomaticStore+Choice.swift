import Logging
import ProcessSpawning
import SecureDictionary

/// How ``AutomaticStore`` chooses, once, within the deadline of the call that needs a store.
///
/// Rules, and why:
/// - **Only a positive absence moves on.** No session bus at all is one. Nobody owning
///   `org.freedesktop.secrets` now is not (the keyring may be restarting, or starting after
///   the program): a name the bus can start is started and awaited until the deadline
///   (`timedOut`: nothing is chosen); one it cannot start is awaited as the record says.
///   (Choosing the files in that window split the dictionary: 1 of 20 CLI writes while the
///   keyring started went to the files; a process started during a 2 s stop wrote 109 times
///   to the files after it came back.)
/// - **A store that chose the keyring before keeps choosing it** (``AutomaticStoreRecord``):
///   with the keyring stopped, it waits for it until the deadline, then throws
///   `serviceUnavailable`; never the files.
/// - **A first choice waits for half the time left** for a keyring that is starting, before it
///   takes (and records) the files; one that chose the files before takes them at once.
///   Without a file store there is nothing to split: `noStoreAvailable` at once.
/// - **Never silently**: see ``AutomaticStore``.
/// - **A sandbox** keeps its own rule: the Secret portal when the Secret Service cannot be
///   reached from it (the bus proxy hides the name, so the bus cannot tell).
extension AutomaticStore {
    typealias Made = (store: any KeyringStore, choice: Choice)

    func makeChoice(until deadline: Deadline) throws(SecureDictionaryError) -> Made {
        if Sandbox.current != nil { return try choiceInSandbox(until: deadline) }
        let name = SessionBusName.secretService
        let presence: SessionBusName.Presence
        do {
            presence = try SessionBusName.presence(of: name, until: deadline)
        } catch .serviceUnavailable(let reason) {
            return try withoutSecretService(because: "no session bus (\(reason))")
        }
        switch presence {
        case .owned:
            return try secretServiceThatAnswers(until: deadline)
        case .activatable:
            switch try SessionBusName.awaitOwner(of: name, starting: true, until: deadline) {
            case .owned: return try secretServiceThatAnswers(until: deadline)
            case .notYet: throw .timedOut  // being started: nothing is chosen
            case .cannotStart(let reason):
                return try whileNobodyOwns(name, because: "cannot start \(name): \(reason)", until: deadline)
            }
        case .absent:
            return try whileNobodyOwns(name, because: "nobody owns \(name)", until: deadline)
        }
    }

    /// Nobody owns the Secret Service's name and the bus cannot start it: the record decides
    /// how long to wait, and whether the files may follow. (`absence` first: `noStoreAvailable`
    /// shows 40 characters of it.)
    private func whileNobodyOwns(_ name: String, because absence: String, until deadline: Deadline)
        throws(SecureDictionaryError) -> Made
    {
        guard let record = choiceRecord else { throw .noStoreAvailable(reason: absence) }
        let recorded = readRecord()
        if recorded == .secretService {
            if try SessionBusName.awaitOwner(of: name, starting: false, until: deadline) == .owned {
                return try secretServiceThatAnswers(until: deadline)
            }
            // 48 characters first: what the error's description shows of the reason.
            throw .serviceUnavailable(
                reason: "not running; this store's dictionaries are in it (\(record.path) records that: remove "
                    + "that file to let the files be used)")
        }
        var waited = ""
        if recorded == nil {
            let wait = deadline.remaining / 2
            if try SessionBusName.awaitOwner(of: name, starting: false, until: Deadline(after: wait)) == .owned {
                return try secretServiceThatAnswers(until: deadline)
            }
            waited = ", and nobody came in \(wait.milliseconds) ms"
        } else {
            waited = ", and these files were chosen before"
        }
        return try withoutSecretService(because: absence + waited)
    }

    /// No Secret Service here: the file store (recorded as chosen when nothing is recorded
    /// now), or `noStoreAvailable`.
    private func withoutSecretService(because absence: String) throws(SecureDictionaryError) -> Made {
        guard let fileStore else { throw .noStoreAvailable(reason: absence) }
        if readRecord() == nil { writeRecord(.encryptedFiles) }
        let reason = "no Secret Service here (\(absence.prefix(120))); \(fileStore.keySource) in \(fileStore.folderPath)"
        return (fileStore, Choice(chosen: .encryptedFiles, reason: reason))
    }

    /// The name has an owner: the Secret Service it is, unless it cannot be reached after all.
    private func secretServiceThatAnswers(until deadline: Deadline) throws(SecureDictionaryError) -> Made {
        let made = try askSecretService(until: deadline)
        if readRecord() != .secretService { writeRecord(.secretService) }
        return made
    }

    /// Inside a sandbox: the Secret Service if it can be reached, else the Secret portal.
    private func choiceInSandbox(until deadline: Deadline) throws(SecureDictionaryError) -> Made {
        do {
            return try askSecretService(until: deadline)
        } catch .serviceUnavailable, .sandboxed {
            return (portal, Choice(chosen: .secretPortal, reason: "a sandbox without access to the Secret Service"))
        }
    }

    /// The Secret Service, once it answered, even locked, refusing a session or failing (its
    /// error to fix). A timeout, a cancel, or a service that cannot be reached (gone again, or
    /// hidden by a sandbox) decides nothing: rethrown.
    private func askSecretService(until deadline: Deadline) throws(SecureDictionaryError) -> Made {
        let reason: String
        do {
            _ = try secretService.diagnose(collection: .default, timeout: deadline.remainingForCall())
            reason = "it answered"
        } catch .noSuchCollection {
            reason = "it answered, without a default collection"
        } catch {
            switch error {
            case .timedOut, .cancelled, .serviceUnavailable, .sandboxed: throw error
            default: reason = "it answered, with an error"
            }
        }
        return (secretService, Choice(chosen: .secretService, reason: reason))
    }

    /// The record in the file store's folder; `nil` without a file store.
    private var choiceRecord: AutomaticStoreRecord? { fileStore.map { AutomaticStoreRecord(folderPath: $0.folderPath) } }

    /// The record, or `nil` when there is none or it cannot be read (logged): a folder the
    /// file store could not use either.
    private func readRecord() -> Chosen? {
        guard let record = choiceRecord else { return nil }
        do {
            return try record.read()
        } catch {
            logger.warning(
                "the automatic store's record cannot be read", metadata: ["path": "\(record.path)", "error": "\(error)"])
            return nil
        }
    }

    private func writeRecord(_ chosen: Chosen) {
        guard let record = choiceRecord else { return }
        do {
            try record.write(chosen)
        } catch {
            logger.warning(
                "the automatic store's choice cannot be recorded", metadata: ["path": "\(record.path)", "error": "\(error)"])
        }
    }
}
