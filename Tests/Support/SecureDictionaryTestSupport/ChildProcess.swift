import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a program to completion, for tests and the reliability suite: its standard input is
/// given, its standard output and error are collected (neither pipe can fill up and stall
/// the child), and a child still running at the timeout is killed.
///
/// ```swift
/// let output = try ChildProcess.run("/usr/bin/python3", ["-c", "print(1)"])
/// #expect(output.status == 0 && output.text == "1\n")
/// ```
public enum ChildProcess {
    public struct Output: Sendable, CustomStringConvertible {
        /// The exit status, or the signal number when ``signaled``.
        public var status: Int32
        /// Ended by a signal (a crash, or the kill at the timeout).
        public var signaled: Bool
        /// Killed because it was still running at the timeout.
        public var timedOut: Bool
        public var stdout: Data
        /// Standard error, byte for byte.
        public var stderrBytes: Data
        /// From the start to the exit.
        public var elapsed: Duration

        /// Standard output as text, exactly.
        public var text: String { String(decoding: stdout, as: UTF8.self) }
        /// Standard output as text, without surrounding white space and line breaks.
        public var trimmedText: String { text.trimmingCharacters(in: .whitespacesAndNewlines) }
        /// Standard error as text.
        public var stderr: String { String(decoding: stderrBytes, as: UTF8.self) }
        /// Exited by itself with status 0.
        public var succeeded: Bool { !signaled && !timedOut && status == 0 }
        /// "exit 3", "signal 11 (crash)", "killed after the timeout".
        public var how: String {
            if timedOut { return "killed after the timeout" }
            if signaled { return "signal \(status) (crash)" }
            return "exit \(status)"
        }
        public var description: String { "\(how), stdout \(text.debugDescription), stderr \(stderr.debugDescription)" }

        public init(
            status: Int32, signaled: Bool = false, timedOut: Bool = false, stdout: Data, stderrBytes: Data,
            elapsed: Duration = .zero
        ) {
            self.status = status
            self.signaled = signaled
            self.timedOut = timedOut
            self.stdout = stdout
            self.stderrBytes = stderrBytes
            self.elapsed = elapsed
        }
    }

    /// Runs `program` (a path, or a name looked up in `PATH`) with `arguments`. `input` is fed
    /// to it (a child that stops reading does not kill the caller with SIGPIPE); `environment`
    /// defaults to this process's. A child still running after `timeout` is killed (SIGKILL).
    ///
    /// - Throws: what `Process.run()` throws when the program cannot be started.
    public static func run(
        _ program: String, _ arguments: [String], input: Data = Data(), environment: [String: String]? = nil,
        timeout: Duration = .seconds(300)
    ) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program.hasPrefix("/") ? program : "/usr/bin/env")
        process.arguments = program.hasPrefix("/") ? arguments : [program] + arguments
        process.environment = environment ?? ProcessInfo.processInfo.environment
        let (stdin, stdout, stderr) = (Pipe(), Pipe(), Pipe())
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        let started = ContinuousClock.now
        signal(SIGPIPE, SIG_IGN)
        try process.run()
        // Each pipe on a thread of its own, so that none can fill up and stall the child.
        let out = Collected(stdout.fileHandleForReading)
        let err = Collected(stderr.fileHandleForReading)
        let writer = stdin.fileHandleForWriting
        DispatchQueue.global().async {
            try? writer.write(contentsOf: input)
            try? writer.close()
        }
        var timedOut = false
        if exited.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout.components.seconds * 1_000_000_000))) == .timedOut {
            timedOut = true
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
        let elapsed = ContinuousClock.now - started
        // A grandchild may keep the pipes open: do not wait for it forever.
        return Output(
            status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
            timedOut: timedOut, stdout: out.bytes(waitingAtMost: .seconds(5)),
            stderrBytes: err.bytes(waitingAtMost: .seconds(5)), elapsed: elapsed)
    }

    /// Everything read from a pipe until its end, by a thread of its own.
    private final class Collected: Sendable {
        private let data = Mutex(Data())
        private let done = DispatchSemaphore(value: 0)

        init(_ handle: FileHandle) {
            DispatchQueue.global().async { [self] in
                let bytes = handle.readDataToEndOfFile()
                data.withLock { $0 = bytes }
                done.signal()
            }
        }

        func bytes(waitingAtMost limit: Duration) -> Data {
            _ = done.wait(timeout: .now() + .nanoseconds(Int(clamping: limit.components.seconds * 1_000_000_000)))
            return data.withLock { $0 }
        }
    }
}
