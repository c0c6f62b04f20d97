import FoundationEssentials
import Glibc

/// Whole reads and writes on a POSIX file descriptor: what the tool used Foundation's
/// `FileHandle` for. FoundationEssentials has no `FileHandle`, and Foundation itself loads
/// ICU, which costs every run of the tool a few milliseconds and megabytes.
///
/// ```swift
/// try FileDescriptor.standardOutput.write(Data("hello\n".utf8))
/// let input = try FileDescriptor.standardInput.read(upToCount: 1024)
/// ```
///
/// It never closes the descriptor: its owner does.
struct FileDescriptor {
    let rawValue: Int32

    static let standardInput = FileDescriptor(rawValue: STDIN_FILENO)
    static let standardOutput = FileDescriptor(rawValue: STDOUT_FILENO)
    static let standardError = FileDescriptor(rawValue: STDERR_FILENO)

    /// A failed system call's `errno`, described by `strerror(3)` ("No space left on device").
    struct Failure: Error, CustomStringConvertible {
        let code: Int32

        /// The failure of the call that just returned -1.
        static var current: Failure { Failure(code: errno) }

        var description: String { String(cString: strerror(code)) }
    }

    /// `open(2)` with `O_CLOEXEC`.
    static func open(_ path: String, _ flags: Int32) throws(Failure) -> FileDescriptor {
        let descriptor = systemOpen(path, flags | O_CLOEXEC)
        guard descriptor >= 0 else { throw .current }
        return FileDescriptor(rawValue: descriptor)
    }

    /// Writes all of `data`, however many `write(2)` calls it takes.
    func write(_ data: Data) throws(Failure) {
        let code = data.withUnsafeBytes { buffer -> Int32 in
            var offset = 0
            while offset < buffer.count {
                let written = systemWrite(rawValue, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return 0
        }
        if code != 0 { throw Failure(code: code) }
    }

    /// Reads until `count` bytes have come or the input ends: fewer bytes only at its end, and
    /// none once it has ended.
    func read(upToCount count: Int) throws(Failure) -> Data {
        var data = Data(count: count)
        let (filled, code) = data.withUnsafeMutableBytes { buffer -> (Int, Int32) in
            var filled = 0
            while filled < count {
                let got = systemRead(rawValue, buffer.baseAddress! + filled, count - filled)
                if got < 0 {
                    if errno == EINTR { continue }
                    return (filled, errno)
                }
                if got == 0 { break }
                filled += got
            }
            return (filled, 0)
        }
        guard code == 0 else {
            data.resetBytes(in: 0..<filled)  // it may hold part of a secret
            throw Failure(code: code)
        }
        data.removeSubrange(filled...)
        return data
    }

    /// Reads everything up to the end of the input, `chunk` bytes at a time.
    func readToEnd(chunk: Int = 1 << 16) throws(Failure) -> Data {
        var data = Data()
        while true {
            let part = try read(upToCount: chunk)
            if part.isEmpty { return data }
            data += part
        }
    }

    /// `fsync(2)`.
    func synchronize() throws(Failure) {
        guard fsync(rawValue) == 0 else { throw .current }
    }

    /// `close(2)`; the descriptor must not be used afterwards.
    func close() throws(Failure) {
        guard systemClose(rawValue) == 0 else { throw .current }
    }
}

// The C functions, under names that the methods above do not hide.
private func systemOpen(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, buffer, count)
}
private func systemClose(_ descriptor: Int32) -> Int32 { close(descriptor) }
