import FoundationEssentials
import SecureDictionary
import SecureDictionaryFileStore

/// `secure-dict doctor --find`: every copy of one dictionary (or all of an application's), in
/// the running provider's collections and the encrypted-file folders, with the providers that
/// are installed but not running (whose copies cannot be asked for), and the commands that keep
/// one copy where there are several. Reads only; never merges, moves or deletes.
///
/// ```swift
/// let report = DoctorFind.make(applicationID: "com.example.app", dictionaryName: "tokens", options: options)
/// try Terminal.write(report.text)
/// ```
struct DoctorFind: Encodable {
    var application: String
    /// Who owns `org.freedesktop.secrets` now; `nil` when nobody does.
    var owner: ProviderProcess?
    /// Whether this session bus lists `org.freedesktop.secrets` among its activatable names
    /// (`ListActivatableNames`): a service file on disk is not enough, a private bus may have none.
    var activatable: Bool?
    var providerName: String?
    /// Why the keyring was not searched.
    var keyringProblem: String?
    /// Providers installed here (other than the one running, when it is known).
    var installed: [ProviderInventory]
    var collections: [Collection]
    var folders: [Folder]
    var copies: [Copy]

    struct Collection: Encodable {
        var path, label: String
        var aliases: [String]
        var locked: Bool
        var unreadableItems: Int
    }

    struct Folder: Encodable {
        var path, reason: String
        var exists: Bool
        var automaticChoice, problem: String?
    }

    struct Copy: Encodable {
        /// "" for the default dictionary.
        var name: String
        var place: String
        /// `keyring` or `file`.
        var kind: String
        var collectionAlias: String?
        var folder: String?
        var modified: Date?
        var generation: UInt64?
        var size, keys: Int?
        var problem: String?
    }

    static func make(
        applicationID: String, dictionaryName: String?, options: SecureDictionary.Options, storage: StoreOptions,
        unlock: Bool, environment: [String: String]
    ) -> DoctorFind {
        let found = DictionaryCopies.find(
            applicationID: applicationID, dictionaryName: dictionaryName, folders: storage.folder.map { [$0] } ?? [],
            credential: storage.credential, unlock: unlock, timeout: max(options.timeout, .seconds(10)),
            environment: environment)
        let pid = SessionBusName.ownerPID(of: SessionBusName.secretService, until: Deadline(after: options.timeout))
        let owner = pid.map(ProviderProcess.inspect(pid:))
        let presence = try? SessionBusName.presence(of: SessionBusName.secretService, until: Deadline(after: options.timeout))
        return DoctorFind(
            application: applicationID, owner: owner,
            activatable: presence.flatMap { $0 == .owned ? nil : $0 == .activatable }, providerName: found.providerName,
            keyringProblem: found.keyringProblem.map { message(for: $0, hint: nil) },
            installed: ProviderInventory.installed(environment: environment),
            collections: found.collections.map {
                Collection(
                    path: $0.path, label: $0.label, aliases: $0.aliases, locked: $0.isLocked, unreadableItems: $0.unreadableItems)
            },
            folders: found.folders.map {
                Folder(
                    path: $0.path, reason: $0.reason, exists: $0.exists, automaticChoice: $0.automaticChoice,
                    problem: $0.problem.map { message(for: $0, hint: nil) })
            },
            copies: found.copies.map(Copy.init))
    }
}

extension DoctorFind.Copy {
    init(_ copy: DictionaryCopies.Copy) {
        name = copy.dictionaryName
        place = copy.place.description
        switch copy.place {
        case .keyring(_, _, _, let aliases):
            kind = "keyring"
            collectionAlias = aliases.first
        case .file(let path):
            kind = "file"
            folder = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        }
        modified = copy.modified
        generation = copy.generation
        size = copy.size
        keys = copy.keyCount
        problem = copy.problem.map { message(for: $0, hint: nil) }
    }
}
