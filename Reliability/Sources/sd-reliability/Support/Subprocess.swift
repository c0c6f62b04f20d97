import Foundation
import SecureDictionaryTestSupport
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a finished child process left behind (SecureDictionaryTestSupport's runner).
typealias ProcessResult = ChildProcess.Output

extension ChildProcess.Output {
    /// The last non-empty line of stdout: where workers put their JSON reply.
    var lastLine: String {
        text.split(separator: "\n", omittingEmptySubsequences: true).last.map(String.init) ?? ""
    }
}

/// A mutable box that background threads fill in.
final class Box<T: Sendable>: Sendable {
    private let storage: Mutex<T>
    init(_ value: T) { storage = Mutex(value) }
    var value: T {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
    func modify<R>(_ body: (inout T) -> R) -> R { storage.withLock { body(&$0) } }
}

enum Subprocess {
    /// The environment children get: ours, plus `extra` (a `nil` value removes a variable).
    static func environment(_ extra: [String: String?]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in extra { environment[key] = value }
        return environment
    }

    /// Runs a program to completion (or kills it at `timeout`), capturing both outputs; a
    /// program that cannot be started gives status 127.
    static func run(
        _ program: String, _ arguments: [String], environment extra: [String: String?] = [:],
        stdin input: Data? = nil, timeout: Duration = .seconds(300)
    ) -> ProcessResult {
        do {
            return try ChildProcess.run(
                program, arguments, input: input ?? Data(), environment: environment(extra), timeout: timeout)
        } catch {
            return ProcessResult(status: 127, stdout: Data(), stderrBytes: Data("cannot start \(program): \(error)".utf8))
        }
    }
}

/// A child we talk to line by line while it runs (a worker that says "ready" and waits).
final class LiveProcess {
    let process = Process()
    private let out = Pipe(), err = Pipe(), input = Pipe()
    private var buffer = Data()
    private let stderrBox = Box(Data())
    private let stderrDone = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)
    private(set) var transcript = Data()

    init(_ program: String, _ arguments: [String], environment extra: [String: String?] = [:]) throws {
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = Subprocess.environment(extra)
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        let exited = exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let handle = err.fileHandleForReading
        let box = stderrBox
        let done = stderrDone
        DispatchQueue.global().async {
            box.value = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    var pid: Int32 { process.processIdentifier }

    /// The next line of stdout, or `nil` at end of file or after `timeout`.
    func readLine(timeout: Duration) -> String? {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        let fd = out.fileHandleForReading.fileDescriptor
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[buffer.startIndex..<newline]
                buffer.removeSubrange(buffer.startIndex...newline)
                return String(decoding: line, as: UTF8.self)
            }
            let left = deadline - clock.now
            if left <= .zero { return nil }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(Double(Int32.max), left.milliseconds + 1))
            let ready = poll(&poller, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { return nil }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 {
                if buffer.isEmpty { return nil }
                let rest = String(decoding: buffer, as: UTF8.self)
                buffer.removeAll()
                return rest
            }
            buffer.append(contentsOf: chunk[0..<count])
            transcript.append(contentsOf: chunk[0..<count])
        }
    }

    func send(_ line: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    func closeInput() { try? input.fileHandleForWriting.close() }

    /// Waits for the exit; kills the child at `timeout`. Returns the rest of stdout too.
    func finish(timeout: Duration) -> ProcessResult {
        closeInput()
        var timedOut = false
        if exited.wait(timeout: .now() + timeout.timeInterval) == .timedOut {
            timedOut = true
            kill(pid, SIGKILL)
            exited.wait()
        }
        while let line = readLine(timeout: .milliseconds(200)) { _ = line }
        _ = stderrDone.wait(timeout: .now() + 5)
        return ProcessResult(
            status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
            timedOut: timedOut, stdout: transcript, stderrBytes: stderrBox.value)
    }
}

extension Duration {
    var timeInterval: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
    var milliseconds: Double { timeInterval * 1_000 }
}

func formatMilliseconds(_ value: Double) -> String {
    value < 10 ? String(format: "%.1f ms", value) : String(format: "%.0f ms", value)
}
