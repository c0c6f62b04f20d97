public import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A child process watched while it runs, for the tests, the reliability suite and the
/// benchmark: every line of its standard output is kept as it comes (by a thread of its own),
/// its standard error too, and closing its standard input tells it to stop.
///
/// ```swift
/// let writer = try LiveChild(KeyringHarness.writer, ["pound", app, "d", "1"])
/// #expect(writer.waitUntil(timeout: .seconds(10)) { $0.contains("ready") })
/// let output = writer.finish()
/// ```
///
/// Started with ``Spawn`` (never Foundation's `Process`, which left descriptors open per run);
/// every pipe end is closed by the time ``finish(timeout:)`` returns. Its other descriptors
/// are not inherited.
public final class LiveChild: Sendable {
    /// The child's process ID.
    public let pid: Int32
    private let input: Mutex<Int32>
    private let state = Mutex(Received())
    private let condition = NSCondition()
    private let exited = DispatchSemaphore(value: 0)
    /// The raw `waitpid` status once reaped, `nil` before.
    private let exitStatus = Mutex<Int32?>(nil)
    private let readersDone = DispatchGroup()
    private let started = ContinuousClock.now
    private let finished = Mutex<ChildProcess.Output?>(nil)

    private struct Received {
        var lines: [String] = []
        var consumed = 0
        var output = Data()
        var errors = Data()
        var ended = false
    }

    /// Starts `program` (a path, or a name looked up in `PATH`) with `arguments` and this
    /// process's environment changed by `extra` (a `nil` value removes a variable).
    ///
    /// - Throws: ``Spawn/Failure`` when it cannot be started (`ENOENT`: no such program).
    public init(_ program: String, _ arguments: [String], environment extra: [String: String?] = [:]) throws(Spawn.Failure) {
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in extra { environment[key] = value }
        var pipes: [(read: Int32, write: Int32)] = []
        do throws(Spawn.Failure) {
            for _ in 0..<3 { pipes.append(try Spawn.pipe()) }
            pid = try Spawn.start(
                program, arguments, environment: environment, standardInput: .descriptor(pipes[0].read),
                standardOutput: .descriptor(pipes[1].write), standardError: .descriptor(pipes[2].write),
                keepsOtherDescriptors: false, searchesPath: true)
        } catch {
            for ends in pipes { for end in [ends.read, ends.write] { close(end) } }
            throw error
        }
        for end in [pipes[0].read, pipes[1].write, pipes[2].write] { close(end) }
        input = Mutex(pipes[0].write)
        signal(SIGPIPE, SIG_IGN)  // a child that exits before reading its input must not end the caller
        read(pipes[1].read, into: \.output, splittingLines: true)
        read(pipes[2].read, into: \.errors, splittingLines: false)
        Thread { [self] in
            // Waits for the exit without reaping, then reaps under the lock that ``kill(_:)``
            // takes: a signal never reaches another process that got the pid meanwhile.
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
            exitStatus.withLock { status in
                var raw: Int32 = 0
                while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
                status = raw
            }
            exited.signal()
        }.start()
    }

    /// Every line it printed so far.
    public var lines: [String] { condition.withLock { state.withLock { $0.lines } } }

    /// Everything it printed on standard output so far.
    public var transcript: Data { state.withLock { $0.output } }

    /// Whether it has exited (and been reaped).
    public var hasExited: Bool { exitStatus.withLock { $0 != nil } }

    /// What it printed on standard error so far, as text.
    public var errors: String { String(decoding: state.withLock { $0.errors }, as: UTF8.self) }

    /// Waits until `done` holds for the lines so far (`true`), or until `timeout` passed or
    /// its output ended without it (`false`).
    public func waitUntil(timeout: Duration, _ done: ([String]) -> Bool) -> Bool {
        let deadline = Date.now.addingTimeInterval(timeout / .seconds(1))
        return condition.withLock {
            while true {
                let (lines, ended) = state.withLock { ($0.lines, $0.ended) }
                if done(lines) { return true }
                if ended || !condition.wait(until: deadline) { return done(state.withLock { $0.lines }) }
            }
        }
    }

    /// The next line it printed that no earlier call returned, waiting up to `timeout`; `nil`
    /// when its output ended or the time passed first. A last line without a newline counts.
    public func nextLine(timeout: Duration) -> String? {
        var line: String?
        _ = waitUntil(timeout: timeout) { lines in
            state.withLock { received in
                guard received.consumed < lines.count else { return false }
                line = lines[received.consumed]
                received.consumed += 1
                return true
            }
        }
        return line
    }

    /// Writes `line` and a newline to its standard input.
    ///
    /// - Throws: ``Spawn/Failure`` with `write(2)`'s error (`EPIPE`: it no longer reads; `EBADF`:
    ///   its input was closed).
    public func send(_ line: String) throws(Spawn.Failure) {
        let bytes = Array((line + "\n").utf8)
        let failure: Int32? = input.withLock { descriptor in
            guard descriptor >= 0 else { return EBADF }
            var written = 0
            while written < bytes.count {
                let count = bytes[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return errno }
                written += count
            }
            return nil
        }
        if let failure { throw Spawn.Failure(code: failure) }
    }

    /// Sends it `signal` (`SIGKILL`, `SIGSTOP`…), unless it has already exited and been reaped.
    public func kill(_ signal: Int32) {
        exitStatus.withLock { status in
            if status == nil { _ = Glibc.kill(pid, signal) }
        }
    }

    /// Closes its standard input (many children stop at its end).
    public func closeInput() {
        input.withLock { descriptor in
            if descriptor >= 0 { close(descriptor) }
            descriptor = -1
        }
    }

    /// Closes its standard input and waits for it to exit, killing it after `timeout`; then
    /// what it printed and how it ended. Later calls return the same at once.
    @discardableResult
    public func finish(timeout: Duration = .seconds(10)) -> ChildProcess.Output {
        finished.withLock { finished in
            if let finished { return finished }
            closeInput()
            var timedOut = false
            if exited.wait(timeout: .now() + .milliseconds(Int(timeout / .milliseconds(1)))) == .timedOut {
                timedOut = true
                kill(SIGKILL)
                exited.wait()
            }
            let elapsed = ContinuousClock.now - started
            // A grandchild may hold the pipes open: give the readers a moment, not forever.
            _ = readersDone.wait(timeout: .now() + 5)
            let raw = exitStatus.withLock { $0 } ?? 0
            let signaled = raw & 0x7F != 0
            let output = state.withLock {
                ChildProcess.Output(
                    status: signaled ? raw & 0x7F : (raw >> 8) & 0xFF, signaled: signaled, timedOut: timedOut,
                    stdout: $0.output, stderrBytes: $0.errors, elapsed: elapsed)
            }
            finished = output
            return output
        }
    }

    /// Reads `descriptor` to its end on a thread of its own, into `field`, and (for standard
    /// output) into lines; closes it at the end.
    private func read(_ descriptor: Int32, into field: any WritableKeyPath<Received, Data> & Sendable, splittingLines: Bool) {
        readersDone.enter()
        Thread { [self] in
            var pending = Data()
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                let chunk = buffer[0..<count]
                var lines: [String] = []
                if splittingLines {
                    pending.append(contentsOf: chunk)
                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
                        pending.removeSubrange(pending.startIndex...newline)
                    }
                }
                condition.withLock {
                    state.withLock {
                        $0[keyPath: field].append(contentsOf: chunk)
                        $0.lines += lines
                    }
                    condition.broadcast()
                }
            }
            close(descriptor)
            if splittingLines {
                condition.withLock {
                    state.withLock {
                        if !pending.isEmpty { $0.lines.append(String(decoding: pending, as: UTF8.self)) }
                        $0.ended = true
                    }
                    condition.broadcast()
                }
            }
            readersDone.leave()
        }.start()
    }
}
