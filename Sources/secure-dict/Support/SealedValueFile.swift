import CSecretShim
import Glibc

/// A value handed to `exec`'s COMMAND as a file instead of a variable (`--file VAR=KEY`): an
/// anonymous in-memory file (`memfd_create(2)`, on no file system) sealed against writing and
/// resizing, inherited by COMMAND, whose variable holds its path.
///
/// ```swift
/// var bytes = Array("s3cret".utf8)
/// let file = try SealedValueFile(holding: &bytes, for: "DB_PASSWORD")  // bytes wiped
/// assignments.append(("DB_PASSWORD", file.path))                         // /proc/self/fd/N
/// ```
///
/// Why a file: the value is then in no environment (not printed by `env`, not in
/// `/proc/PID/environ`, a crash report or a child's environment), as systemd credentials and
/// `sops exec-file` hand secrets over. COMMAND's children inherit the descriptor unless
/// COMMAND closes it. `/proc/self/fd/N` opens the file anew from its start in whichever
/// process opens it.
struct SealedValueFile {
    /// The descriptor COMMAND inherits (not close-on-exec).
    let descriptor: Int32

    /// The path COMMAND opens: `/proc/self/fd/N`.
    var path: String { "/proc/self/fd/\(descriptor)" }

    /// Makes the file for `variable` from `bytes`, then wipes `bytes`.
    ///
    /// - Throws: ``CommandFailure/inputOutput(_:)`` naming the variable when the kernel
    ///   refuses (no memory, too many descriptors).
    init(holding bytes: inout [UInt8], for variable: String) throws(CommandFailure) {
        defer { bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
        let descriptor = bytes.withUnsafeBytes { sd_process_sealed_memory_file("secure-dict", $0.baseAddress, $0.count) }
        guard descriptor >= 0 else {
            throw .inputOutput(
                "--file \(variable): no in-memory file could be made (\(String(cString: strerror(errno)))): nothing was run")
        }
        self.descriptor = descriptor
    }
}
