import Glibc

/// What a process is called, for the errors that name a lock's holder.
package enum ProcessName {
    /// The command name of a process (`/proc/PID/comm`), or `nil` when it cannot be read.
    package static func command(of pid: Int32) -> String? {
        guard let file = fopen("/proc/\(pid)/comm", "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        var text = Substring(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        while text.last == "\n" { text = text.dropLast() }
        return text.isEmpty ? nil : String(text)
    }
}
