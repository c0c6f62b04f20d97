import FoundationEssentials
import Glibc

/// Files that hold secrets: created with mode 0600, replaced atomically.
///
/// ```swift
/// try PrivateFile.write(bytes, to: "backup.json")      // a new 0600 file, renamed into place
/// try PrivateFile.write(bytes, to: "/dev/fd/63")       // a pipe, e.g. >(gpg -c …): written to
/// ```
///
/// A path that exists and is not a regular file (a pipe from process substitution, a
/// terminal, `/dev/stdout`) is written to as it is: it cannot be replaced, and it holds no
/// file that others could read later. A named pipe (FIFO) that no program reads is waited
/// for until `readerDeadline`, never longer: opening one for writing would otherwise block
/// until a reader comes, forever if none does.
enum PrivateFile {
    static func write(_ data: Data, to path: String, readerDeadline: Duration) throws(CommandFailure) {
        var status = stat()
        if stat(path, &status) == 0, (status.st_mode & S_IFMT) != S_IFREG, (status.st_mode & S_IFMT) != S_IFDIR {
            try writeInPlace(data, to: path, readerDeadline: readerDeadline)
            return
        }
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        var template = Array("\(directory)/.\(url.lastPathComponent).XXXXXX".utf8CString)
        let descriptor = mkstemp(&template)  // mode 0600
        guard descriptor >= 0 else {
            throw .inputOutput("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var done = false
        defer {
            if !done { unlink(temporary) }
        }
        do {
            try Self.write(data, to: FileDescriptor(rawValue: descriptor), synchronize: true)
        } catch {
            throw .inputOutput("cannot write \(path): \(error)")
        }
        guard rename(temporary, path) == 0 else {
            throw .inputOutput("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        done = true
    }

    /// Writes to something that is not a regular file (a pipe, a device) without replacing it.
    private static func writeInPlace(_ data: Data, to path: String, readerDeadline: Duration) throws(CommandFailure) {
        let file = try openWaitingForReader(path, deadline: readerDeadline)
        do {
            try write(data, to: file, synchronize: false)
        } catch {
            throw .inputOutput("cannot write \(path): \(error)")
        }
    }

    /// Opens `path` for writing without blocking. A FIFO that no program has opened for reading
    /// refuses (`ENXIO`): tried again every 10 ms until `deadline`. Once open, writes block
    /// again, so that a reader that takes its time (gpg asking for a passphrase) is waited for.
    private static func openWaitingForReader(_ path: String, deadline: Duration) throws(CommandFailure) -> FileDescriptor {
        let end = ContinuousClock.now + deadline
        while true {
            do {
                let file = try FileDescriptor.open(path, O_WRONLY | O_NONBLOCK)
                _ = fcntl(file.rawValue, F_SETFL, fcntl(file.rawValue, F_GETFL) & ~O_NONBLOCK)
                return file
            } catch {
                guard error.code == ENXIO else { throw .inputOutput("cannot write \(path): \(error)") }
                guard ContinuousClock.now < end else {
                    throw .inputOutput(
                        "cannot write \(path): no program opened this named pipe for reading within \(deadline) (--timeout)")
                }
                usleep(10_000)
            }
        }
    }

    /// Writes all of `data` to `file` and closes it (also when writing fails).
    private static func write(
        _ data: Data, to file: FileDescriptor, synchronize: Bool
    ) throws(FileDescriptor.Failure) {
        do {
            try file.write(data)
            if synchronize { try file.synchronize() }
        } catch {
            try? file.close()
            throw error
        }
        try file.close()
    }
}
