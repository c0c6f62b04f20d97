import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a program to completion, for tests: its standard input is given, its standard output
/// and error are collected, and neither pipe can fill up and stall the child.
///
/// ```swift
/// let output = try ChildProcess.run("/usr/bin/python3", ["-c", "print(1)"])
/// #expect(output.status == 0 && output.text == "1\n")
/// ```
public enum ChildProcess {
    public struct Output: Sendable, CustomStringConvertible {
        public var status: Int32
        public var stdout: Data
        public var stderr: String
        /// Standard output as text, exactly.
        public var text: String { String(decoding: stdout, as: UTF8.self) }
        /// Standard output as text, without surrounding white space and line breaks.
        public var trimmedText: String { text.trimmingCharacters(in: .whitespacesAndNewlines) }
        public var description: String { "exit \(status), stdout \(text.debugDescription), stderr \(stderr.debugDescription)" }
    }

    /// Runs `program` (a path, or a name looked up in `PATH`) with `arguments`. `input` is fed
    /// to it (a child that stops reading does not kill the caller with SIGPIPE); `environment`
    /// defaults to this process's.
    public static func run(
        _ program: String, _ arguments: [String], input: Data = Data(), environment: [String: String]? = nil
    ) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program.hasPrefix("/") ? program : "/usr/bin/env")
        process.arguments = program.hasPrefix("/") ? arguments : [program] + arguments
        process.environment = environment ?? ProcessInfo.processInfo.environment
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // stderr on its own thread, so that neither pipe can fill up and stall the child.
        let errors = Collected()
        let reader = Thread { errors.set(stderr.fileHandleForReading.readDataToEndOfFile()) }
        reader.start()
        signal(SIGPIPE, SIG_IGN)
        try? stdin.fileHandleForWriting.write(contentsOf: input)
        try? stdin.fileHandleForWriting.close()
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while !reader.isFinished { usleep(1000) }
        return Output(status: process.terminationStatus, stdout: out, stderr: String(decoding: errors.get(), as: UTF8.self))
    }

    /// The stderr bytes, handed from the reader thread.
    private final class Collected: @unchecked Sendable {  // guarded by `lock`
        private var data = Data()
        private let lock = NSLock()
        func set(_ value: Data) { lock.withLock { data = value } }
        func get() -> Data { lock.withLock { data } }
    }
}
