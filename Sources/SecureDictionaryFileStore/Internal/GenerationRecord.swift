import Crypto
import FoundationEssentials
import SecureDictionary
import Synchronization

/// What identifies a store folder however its path is spelled: its device and inode, read
/// from the open folder (`FolderSafety.checkFolder(_:path:)`).
struct FolderIdentity: Hashable, Sendable, CustomStringConvertible {
    let device: UInt64
    let inode: UInt64

    /// `DEVICE:INODE`, as the kernel keyring's records name the folder.
    var description: String { "\(device):\(inode)" }
}

/// The newest generation of each item file that this process, and this login session, has
/// read or written: an older file is an old copy put back (a rollback).
///
/// ```swift
/// let record = folder.record(of: name, in: identity)   // in `ItemFileFolder.withFolder(create:_:)`
/// let newest = record.newest                           // first: see "read the record first"
/// let header = try EncryptedItemFile.wholeFileHeader(of: try read(file))
/// guard header.generation >= newest else { throw .rolledBack(path: file) }
/// record.note(header.generation, written: false)
/// ```
///
/// Why there: whoever can put an old file back can put back everything beside it, so the
/// record is kept where writing files cannot reach: this process's memory, and the login
/// session's kernel keyring (`KernelGenerationTable`). Writes record; reads only compare. Not
/// detected (<doc:MachinesWithoutADesktop>): across a reboot or logout, without a kernel
/// keyring, past `KernelGenerationTable`'s bounds, or by a process of the same user.
///
/// Invariant, *a file is known by what it is*: the record is keyed by the folder's device and
/// inode and the file's name, so every spelling of the folder (`X/`, `X/./…`, a link above it)
/// meets it (keyed by the path, `X/` read an old copy that `X` refused). Test:
/// `FileStoreAdversarialTests.anOldCopyPutBackIsRefusedThroughEverySpellingOfItsFolder`.
///
/// Invariant, *read the record first*: a reader takes ``newest`` before it reads the file,
/// and a writer records a generation only once its file is in place; read after the file, a
/// write in between made the genuine file look rolled back (34-39 of about 400 reads beside
/// one writer). Test: `FileStoreAdversarialTests.aReadBesideAWriterIsNeverARollback`.
///
/// Generations are microseconds since 1970, above the file's previous one: a dictionary
/// deleted and written anew by another session still outranks every older copy.
struct GenerationRecord: Sendable {
    let folder: FolderIdentity
    /// The file's name in the folder.
    let file: String
    /// The folder's path as this store spells it: for messages and older versions' records.
    let folderPath: String

    private static let inProcess = Mutex<[String: UInt64]>([:])

    private var key: String { "\(folder)/\(file)" }

    /// The file's identifier in the folder's kernel record: 8 bytes of SHA-256 of its name.
    var fileID: UInt64 {
        SHA256.hash(data: Array(file.utf8)).prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The newest generation known for the file: 0 when none.
    var newest: UInt64 {
        let here = Self.inProcess.withLock { $0[key] ?? 0 }
        let session = KernelGenerationTable(folder: folder).generation(of: fileID) ?? 0
        return max(here, session, legacyValue ?? 0)
    }

    /// Records `generation` as seen (this process only) or written (also in the kernel
    /// keyring; under the folder's write lock, which serialises the record's changes).
    func note(_ generation: UInt64, written: Bool) {
        Self.inProcess.withLock { $0[key] = max($0[key] ?? 0, generation) }
        guard written else { return }
        KernelGenerationTable(folder: folder).record(generation, of: fileID, in: folderPath)
        if legacyValue != nil { KernelKeyring.revoke(legacyDescription) }
    }

    /// The generation for the next write of a file whose current generation is `current`.
    func next(after current: UInt64) -> UInt64 {
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
        return max(now, max(current, newest) + 1)
    }

    // MARK: Records of older versions (one key per path), read until their next write replaces them

    private var legacyDescription: String {
        "securedictionary:generation:\(hex(SHA256.hash(data: Array("\(folderPath)/\(file)".utf8)).prefix(16)))"
    }

    private var legacyValue: UInt64? {
        guard let bytes = KernelKeyring.read(legacyDescription, capacity: 8), bytes.count == 8 else { return nil }
        return bytes.withUnsafeBytes { $0.reduce(0) { $0 << 8 | UInt64($1) } }
    }
}
