import Crypto
import SecureDictionary
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The newest generation of each item file that this process, and this login session, has
/// read or written: an older file is an old copy put back (a rollback).
///
/// ```swift
/// let record = GenerationRecord(file: folder.filePath(of: item))
/// guard header.generation >= record.newest else { throw .rolledBack(path: file) }
/// record.note(header.generation, written: false)
/// ```
///
/// Why two places: nothing in the folder can say what the newest file was (whoever can put
/// an old file back can put back everything beside it), so the record is kept where the
/// files' writer cannot reach by writing files: this process's memory (always), and the
/// kernel keyring of the login session (`KernelKeyring`; one 8-byte key per file, without
/// a timeout), so that the next process of the session knows too. Every write records its
/// generation there; reads only compare (a read of a newer file needs no record: its
/// writer recorded it). What is not detected: a rollback across a reboot or logout, in a
/// session without the kernel keyring (Flatpak's seccomp filter), or by someone who can
/// also change this user's kernel keyring (a process of the same user).
///
/// Generations are microseconds since 1970, and larger than the file's previous one: so a
/// dictionary deleted and written anew by another session still gets a generation above
/// every copy older than the deletion.
struct GenerationRecord: Sendable {
    let file: String
    private let description: String

    init(file: String) {
        self.file = file
        let digest = SHA256.hash(data: Array(file.utf8)).prefix(16).map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
        description = "securedictionary:generation:\(digest)"
    }

    private static let inProcess = Mutex<[String: UInt64]>([:])

    /// The newest generation known for the file: 0 when none.
    var newest: UInt64 {
        let here = Self.inProcess.withLock { $0[file] ?? 0 }
        return max(here, kernelValue ?? 0)
    }

    /// Records `generation` as seen (`written: false`, this process only) or written (also
    /// in the kernel keyring).
    func note(_ generation: UInt64, written: Bool) {
        Self.inProcess.withLock { $0[file] = max($0[file] ?? 0, generation) }
        guard written, generation > (kernelValue ?? 0) else { return }
        let bytes = (0..<8).reversed().map { UInt8(truncatingIfNeeded: generation >> (UInt64($0) * 8)) }
        bytes.withUnsafeBytes { _ = KernelKeyring.store(description, $0, timeout: nil) }
    }

    /// The generation for the next write of a file whose current generation is `current`.
    func next(after current: UInt64) -> UInt64 {
        let now = UInt64(max(0, Date().timeIntervalSince1970 * 1_000_000))
        return max(now, max(current, newest) + 1)
    }

    private var kernelValue: UInt64? {
        guard let bytes = KernelKeyring.read(description, capacity: 8), bytes.count == 8 else { return nil }
        return bytes.withUnsafeBytes { $0.reduce(0) { $0 << 8 | UInt64($1) } }
    }
}
