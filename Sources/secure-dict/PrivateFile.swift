import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Files that hold secrets: created with mode 0600, replaced atomically.
enum PrivateFile {
    static func write(_ data: Data, to path: String) throws(CommandFailure) {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        var template = Array("\(directory)/.\(url.lastPathComponent).XXXXXX".utf8CString)
        let descriptor = mkstemp(&template)   // mode 0600
        guard descriptor >= 0 else {
            throw .inputOutput("cannot create \(path): \(String(cString: strerror(errno)))")
        }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var done = false
        defer {
            if !done { unlink(temporary) }
        }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            try handle.write(contentsOf: data)
            try handle.synchronize()
            try handle.close()
        } catch {
            throw .inputOutput("cannot write \(path): \(error.localizedDescription)")
        }
        guard rename(temporary, path) == 0 else {
            throw .inputOutput("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        done = true
    }
}
