import Glibc
import Logging
import SecureDictionary
import Synchronization

/// The file stores' log: what a person or `secure-dict doctor` should hear about, never a
/// key or a value.
let fileStoreLogger = Logger(label: "SecureDictionary.FileStore")

/// The generations of one folder's files, kept for the login session in the kernel keyring
/// (see `GenerationRecord`): one `user` key per folder, `securedictionary:generations:DEVICE:INODE`,
/// holding a version byte and one 16-byte record per file (8 bytes of its name's digest, 8
/// of its newest generation written).
///
/// Invariant, *bounded*: at most `maximumFolders` keys of at most 1,025 bytes (8 keys and
/// 8.6 KB of a non-root user's 200 keys and 20,000 bytes). With a key per file, as older
/// versions kept, the quota was full after about 200 files: the user's other programs could
/// add no key, and the next files' rollback went unnoticed. Test:
/// `FileStoreProcesses.aUserWithManyDictionariesKeepsFewKernelKeysAndRollbackIsStillRefused`.
/// Beyond the bounds, the record written least recently goes (logged at `debug`: a bound).
///
/// Invariant, *never silent*: a record refused for a full quota (`EDQUOT`) is a `warning` with
/// the quota's use, and ``problem()`` tells `secure-dict doctor`; no kernel keyring at all is
/// how Docker's and Flatpak's sandboxes are (`debug`). Test: `FileStoreProcesses.aFullKernelKeyQuotaIsReported`.
///
/// Changes are read-modify-write of one key, serialised by the folder's write lock.
struct KernelGenerationTable {
    static let prefix = "securedictionary:generations:"
    static let maximumFiles = 64
    static let maximumFolders = 8
    static let version: UInt8 = 1
    private static let entrySize = 16
    private static let capacity = 1 + maximumFiles * entrySize

    let folder: FolderIdentity

    var description: String { Self.prefix + folder.description }

    /// The newest generation recorded for `file` (a `GenerationRecord.fileID`), if any.
    func generation(of file: UInt64) -> UInt64? {
        KernelKeyring.read(description, capacity: Self.capacity).map(Self.entries)?[file]
    }

    /// Records `generation` as the newest written of `file` (of the folder `folderPath`, for the log).
    func record(_ generation: UInt64, of file: UInt64, in folderPath: String) {
        let stored = KernelKeyring.read(description, capacity: Self.capacity).map(Self.entries)
        var entries = stored ?? [:]
        entries[file] = max(entries[file] ?? 0, generation)
        if entries.count > Self.maximumFiles {
            let dropped = entries.sorted { $0.value < $1.value }.prefix(entries.count - Self.maximumFiles)
            for entry in dropped { entries[entry.key] = nil }
            let text =
                "The kernel keyring keeps the generations of the \(Self.maximumFiles) files written last in a folder: "
                + "a rollback of the oldest of \(folderPath) is now noticed within one process only."
            if Self.firstTime("files") { fileStoreLogger.debug("\(text)") }
        }
        if stored == nil { makeRoomForAFolder(folderPath) }
        let payload =
            [Self.version] + entries.sorted { $0.value > $1.value }.flatMap { Self.bigEndian($0.key) + Self.bigEndian($0.value) }
        let failure = payload.withUnsafeBytes { KernelKeyring.failureToStore(description, $0, timeout: nil) }
        if let failure { Self.report(failure, folder: folderPath) }
    }

    /// Why the generations cannot be recorded for the session now, or `nil` when they can.
    /// For `secure-dict doctor`.
    static func problem() -> String? {
        guard KernelKeyring.session != nil else {
            return "the kernel keyring is unavailable here (a seccomp filter?): a rollback is noticed only by the "
                + "process that saw the newer copy"
        }
        if let quota = KernelKeyring.quota(), quota.isFull(forA: capacity + 64) {
            return "this user's kernel key quota is full (\(quota.description)): a rollback of files written now goes "
                + "unnoticed by the next process; remove keys no longer needed ('keyctl show @s') or raise "
                + "/proc/sys/kernel/keys/maxkeys and maxbytes"
        }
        return nil
    }

    /// Beyond `maximumFolders` keys, revokes those of the folders written least recently.
    private func makeRoomForAFolder(_ folderPath: String) {
        let others = KernelKeyring.keys(withPrefix: Self.prefix).filter { $0.description != description }
        guard others.count >= Self.maximumFolders else { return }
        let byAge = others.map { key in
            (key.serial, KernelKeyring.read(serial: key.serial, capacity: Self.capacity).map(Self.entries)?.values.max() ?? 0)
        }.sorted { $0.1 < $1.1 }
        for (serial, _) in byAge.prefix(others.count - Self.maximumFolders + 1) { KernelKeyring.revoke(serial: serial) }
        let text =
            "The kernel keyring keeps the generations of the \(Self.maximumFolders) folders written last: the record of "
            + "the oldest was dropped for \(folderPath)."
        if Self.firstTime("folders") { fileStoreLogger.debug("\(text)") }
    }

    private static let reported = Mutex<Set<String>>([])

    /// Whether `what` is logged for the first time in this process.
    private static func firstTime(_ what: String) -> Bool { reported.withLock { $0.insert(what).inserted } }

    private static func report(_ failure: Int32, folder: String) {
        guard firstTime("\(failure) \(folder)") else { return }
        guard failure == EDQUOT else {
            let text =
                "Rollback of the encrypted files in \(folder) is noticed only within this process: the kernel keyring "
                + "refused the record (\(String(cString: strerror(failure))))."
            fileStoreLogger.debug("\(text)")
            return
        }
        let use = KernelKeyring.quota()?.description ?? "see /proc/key-users"
        let text =
            "Rollback of the encrypted files in \(folder) goes unnoticed by the next process: their generation could not "
            + "be recorded, as this user's kernel key quota is full (\(use)). Remove kernel keys no longer needed "
            + "('keyctl show @s'), or raise /proc/sys/kernel/keys/maxkeys and maxbytes."
        fileStoreLogger.warning("\(text)")
    }

    static func entries(_ payload: SecretBytes) -> [UInt64: UInt64] {
        let bytes = payload.withUnsafeBytes { Array($0) }
        guard bytes.first == version, (bytes.count - 1) % entrySize == 0 else { return [:] }
        var entries: [UInt64: UInt64] = [:]
        for offset in stride(from: 1, to: bytes.count, by: entrySize) {
            let id = bytes[offset..<(offset + 8)].reduce(0) { $0 << 8 | UInt64($1) }
            let generation = bytes[(offset + 8)..<(offset + 16)].reduce(0) { $0 << 8 | UInt64($1) }
            entries[id] = max(entries[id] ?? 0, generation)
        }
        return entries
    }

    private static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) }
    }
}
