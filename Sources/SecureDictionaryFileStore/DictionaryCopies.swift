public import FoundationEssentials
public import SecureDictionary

/// Every copy of an application's dictionaries that this process can find: in each collection
/// of the Secret Service that runs now, and in the encrypted-file folders this user's
/// configuration points at. For "my secrets are gone" reports, mostly splits: another provider
/// took the Secret Service, the item's collection is no longer the default, a fallback wrote
/// files while the keyring was away.
///
/// ```swift
/// let found = DictionaryCopies.find(applicationID: "com.example.app", dictionaryName: "tokens")
/// for copy in found.copies { logger.info("\(copy)") }   // where, when, size, keys: never a value
/// if let split = found.splits.first { logger.warning("\(split.count) copies of \(split[0].dictionaryName)") }
/// ```
///
/// It changes nothing (never merges, moves or deletes) and shows no prompt unless `unlock`
/// asks for the provider's unlock dialog. A copy's keys are counted in place; nothing decoded
/// is kept. A provider that does not own the Secret Service's bus name now is not asked.
public struct DictionaryCopies: Sendable {
    /// One stored copy of a dictionary.
    public struct Copy: Sendable, CustomStringConvertible {
        /// Where a copy is.
        public enum Place: Sendable, Hashable, CustomStringConvertible {
            /// An item of the collection at `collectionPath` of the running provider
            /// (`provider`: "gnome-keyring", "KWallet", "KeePassXC" or `nil`), known by `aliases`.
            case keyring(provider: String?, collectionPath: String, label: String, aliases: [String])
            /// An encrypted file.
            case file(path: String)

            public var description: String {
                switch self {
                case .keyring(let provider, let path, let label, let aliases):
                    let known = aliases.isEmpty ? "no alias" : "alias " + aliases.joined(separator: ", ")
                    return "\(provider ?? "Secret Service") collection \"\(label)\" (\(path), \(known))"
                case .file(let path): return path
                }
            }
        }

        public let applicationID: String
        /// The dictionary's name; empty for the default dictionary.
        public let dictionaryName: String
        public let place: Place
        /// When it was last written: the item's Modified time (D-Bus), or the file's modification time.
        public let modified: Date?
        /// A file's generation (larger at every write of it); `nil` for the keyring.
        public let generation: UInt64?
        /// Bytes: the stored property list in the keyring, the whole file for a file.
        public let size: Int?
        /// How many keys it holds, when it was read and decodes.
        public let keyCount: Int?
        /// Why it was not read or does not decode (a locked collection, a key this process does
        /// not have, a damaged blob); `nil` when it decodes.
        public let problem: SecureDictionaryError?

        /// Whether it was read and decodes.
        public var decodes: Bool { keyCount != nil }

        /// Where, when, how big and how many keys: never a key or a value.
        public var description: String {
            var facts = [place.description]
            if let modified { facts.append("modified \(modified.formatted(.iso8601))") }
            if let generation { facts.append("generation \(generation)") }
            if let size { facts.append("\(size) bytes") }
            if let keyCount { facts.append("\(keyCount) key\(keyCount == 1 ? "" : "s")") }
            if let problem { facts.append("not read: \(problem)") }
            return facts.joined(separator: ", ")
        }
    }

    /// A collection of the running provider, and the items of the application it holds that
    /// could not be read.
    public struct Collection: Sendable {
        public let path: String
        public let label: String
        /// Among `default`, `session` and `login`, those that name it.
        public let aliases: [String]
        public let isLocked: Bool
        /// Items of the application that could not be read (their names are unknown).
        public let unreadableItems: Int
        /// Why: `locked`, or `confirmationRequired` (KeePassXC waits for its user to allow this process).
        public let unreadableReason: SecureDictionaryError?
    }

    /// An encrypted-file folder that was searched.
    public struct Folder: Sendable {
        public let path: String
        /// Why it was searched, e.g. `$XDG_DATA_HOME/securedictionary (EncryptedFileStore's default)`.
        public let reason: String
        public let exists: Bool
        /// What `AutomaticStore` recorded there: `keyring` or `files`; `nil` when nothing.
        public let automaticChoice: String?
        /// Why it could not be searched (an unsafe folder…).
        public let problem: SecureDictionaryError?
    }

    public let applicationID: String
    /// Every copy found, by dictionary name, newest first.
    public let copies: [Copy]
    /// Every collection of the running provider.
    public let collections: [Collection]
    /// The folders searched.
    public let folders: [Folder]
    /// The provider that answered for the Secret Service.
    public let providerName: String?
    /// Why the Secret Service could not be searched (none runs, a sandbox, a timeout…).
    public let keyringProblem: SecureDictionaryError?

    /// The dictionaries found in more than one place, each as its copies newest first.
    public var splits: [[Copy]] {
        Dictionary(grouping: copies, by: \.dictionaryName).values.filter { $0.count > 1 }
            .map { Self.newestFirst($0) }.sorted { $0[0].dictionaryName < $1[0].dictionaryName }
    }

    /// Searches the Secret Service that runs now and the folders (see the type's summary).
    ///
    /// ```swift
    /// let found = DictionaryCopies.find(applicationID: "com.example.app")   // every dictionary of the app
    /// ```
    ///
    /// - Parameters:
    ///   - applicationID: the application whose dictionaries are searched.
    ///   - dictionaryName: one dictionary (`""` for the default one); `nil` for all of the application's.
    ///   - folders: more folders to search, beside those of this user's configuration
    ///     (`EncryptedFileStore`'s default, `$STATE_DIRECTORY/securedictionary`, the Secret
    ///     portal's `$XDG_DATA_HOME/securedictionary` and a Flatpak's
    ///     `~/.var/app/APP-ID/data/securedictionary`).
    ///   - credential: the systemd credential whose key decodes files of a master secret.
    ///   - unlock: unlock locked collections first, with the provider's dialog where one is needed.
    ///   - timeout: for the Secret Service's part (a dialog included).
    ///   - environment: where the folders' variables are read (`XDG_DATA_HOME`, `STATE_DIRECTORY`,
    ///     `CREDENTIALS_DIRECTORY`, `HOME`).
    ///
    /// Throws nothing: what could not be searched is in ``keyringProblem`` and ``Folder/problem``.
    public static func find(
        applicationID: String, dictionaryName: String? = nil, folders: [String] = [],
        credential: String = "securedictionary", unlock: Bool = false, timeout: Duration = .seconds(10),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> DictionaryCopies {
        let keyring = keyringCopies(
            applicationID: applicationID, dictionaryName: dictionaryName, unlock: unlock, timeout: timeout)
        let files = fileCopies(
            applicationID: applicationID, dictionaryName: dictionaryName, extra: folders, credential: credential,
            environment: environment)
        let copies = Dictionary(grouping: keyring.copies + files.copies, by: \.dictionaryName)
            .sorted { $0.key < $1.key }.flatMap { newestFirst($0.value) }
        return DictionaryCopies(
            applicationID: applicationID, copies: copies, collections: keyring.collections, folders: files.folders,
            providerName: keyring.providerName, keyringProblem: keyring.problem)
    }

    /// The Secret Service's part: the copies in every collection of the provider that owns the
    /// bus name now.
    private static func keyringCopies(applicationID: String, dictionaryName: String?, unlock: Bool, timeout: Duration)
        -> (copies: [Copy], collections: [Collection], providerName: String?, problem: SecureDictionaryError?)
    {
        do throws(SecureDictionaryError) {
            // Only a provider that runs: opening the service would start one, a change.
            guard try SessionBusName.presence(of: SessionBusName.secretService, until: Deadline(after: timeout)) == .owned
            else {
                throw .serviceUnavailable(reason: "no provider owns \(SessionBusName.secretService) now")
            }
            let survey = try SecretServiceStore().survey(
                applicationID: applicationID, dictionaryName: dictionaryName, unlock: unlock, timeout: timeout)
            var copies: [Copy] = []
            let collections = survey.collections.map { collection in
                let place = Copy.Place.keyring(
                    provider: survey.providerName, collectionPath: collection.path, label: collection.label,
                    aliases: collection.aliases)
                copies += collection.copies.map { copy in
                    Copy(
                        applicationID: applicationID, dictionaryName: copy.dictionaryName, place: place,
                        modified: copy.modified.map { Date(timeIntervalSince1970: TimeInterval($0)) }, generation: nil,
                        size: copy.size, keyCount: copy.keyCount, problem: copy.problem)
                }
                return Collection(
                    path: collection.path, label: collection.label, aliases: collection.aliases,
                    isLocked: collection.isLocked, unreadableItems: collection.unreadable,
                    unreadableReason: collection.unreadableReason)
            }
            return (copies, collections, survey.providerName, nil)
        } catch {
            return ([], [], nil, error)
        }
    }

    /// Newest first; copies without a time last.
    static func newestFirst(_ copies: [Copy]) -> [Copy] {
        copies.sorted { ($0.modified ?? .distantPast) > ($1.modified ?? .distantPast) }
    }
}
