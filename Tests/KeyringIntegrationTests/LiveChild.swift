import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A child process the test watches while it runs: every line of its standard output is kept
/// as it comes (by a thread of its own), and closing its standard input tells it to stop.
///
/// ```swift
/// let writer = try LiveChild(KeyringHarness.writer, ["pound", app, "d", "1"])
/// #expect(writer.waitUntil(timeout: .seconds(10)) { $0.contains("ready") })
/// writer.finish()
/// ```
final class LiveChild: @unchecked Sendable {  // `lines` only under `condition`; the rest set in init
    private let process = Process()
    private let output = Pipe()
    private let input = Pipe()
    private let exited = DispatchSemaphore(value: 0)
    private let condition = NSCondition()
    private var received: [String] = []
    private var ended = false

    init(_ program: String, _ arguments: [String], environment extra: [String: String] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        let exited = exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let reading = output.fileHandleForReading
        Thread { [self] in
            var pending = Data()
            while true {
                let chunk = reading.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                var lines: [String] = []
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                    pending.removeSubrange(pending.startIndex...newline)
                }
                condition.withLock {
                    received += lines
                    condition.broadcast()
                }
            }
            condition.withLock {
                ended = true
                condition.broadcast()
            }
        }.start()
    }

    var pid: Int32 { process.processIdentifier }

    /// Every line it printed so far.
    var lines: [String] { condition.withLock { received } }

    /// Waits until `done` holds for the lines so far (`true`), or until `timeout` passed or
    /// its output ended without it (`false`).
    func waitUntil(timeout: Duration, _ done: ([String]) -> Bool) -> Bool {
        let deadline = Date(
            timeIntervalSinceNow: Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        return condition.withLock {
            while !done(received) {
                if ended || !condition.wait(until: deadline) { return done(received) }
            }
            return true
        }
    }

    /// Writes `line` and a newline to its standard input.
    func send(_ line: String) throws {
        try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Closes its standard input and waits for it to exit, killing it after `timeout`.
    func finish(timeout: Duration = .seconds(10)) {
        try? input.fileHandleForWriting.close()
        let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
        if exited.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds))) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
        }
    }
}
