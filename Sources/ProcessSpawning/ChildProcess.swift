import Dispatch
public import FoundationEssentials
import Glibc
import Synchronization

/// Runs a program to completion: its standard input is given, its standard output and error
/// are collected (neither pipe can fill up and stall the child), and a child still running at
/// the timeout is killed. For `secure-dict doctor`, the tests and the reliability suite.
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
    /// to it (a child that stops reading does not kill the caller with SIGPIPE: it is ignored
    /// once there is input to write); `environment` defaults to this process's. A child still
    /// running after `timeout` is killed (SIGKILL). Output that a grandchild keeps open is
    /// waited for at most `outputGrace` after the exit.
    ///
    /// Started with ``Spawn``, every pipe end closed by this function: Foundation's `Process`
    /// left three descriptors open per run (a 200-run test reached 800), and past about a
    /// thousand its `run()` read beyond a buffer (AddressSanitizer: heap-buffer-overflow in
    /// `findMaximumOpenFromProcSelfFD`) and crashed the test process.
    ///
    /// - Throws: ``Spawn/Failure`` when the program cannot be started.
    public static func run(
        _ program: String, _ arguments: [String], input: Data = Data(), environment: [String: String]? = nil,
        timeout: Duration = .seconds(300), outputGrace: Duration = .seconds(5)
    ) throws(Spawn.Failure) -> Output {
        if !input.isEmpty { signal(SIGPIPE, SIG_IGN) }
        var pipes: [(read: Int32, write: Int32)] = []
        do throws(Spawn.Failure) {
            for _ in 0..<3 { pipes.append(try Spawn.pipe()) }
        } catch {
            for ends in pipes { for end in [ends.read, ends.write] { close(end) } }
            throw error
        }
        let (toChild, fromChild, errorsFromChild) = (pipes[0], pipes[1], pipes[2])
        let started = ContinuousClock.now
        let child: pid_t
        do throws(Spawn.Failure) {
            child = try Spawn.start(
                program, arguments, environment: environment ?? ProcessInfo.processInfo.environment,
                standardInput: .descriptor(toChild.read), standardOutput: .descriptor(fromChild.write),
                standardError: .descriptor(errorsFromChild.write), searchesPath: true)
        } catch {
            for ends in pipes { for end in [ends.read, ends.write] { close(end) } }
            throw error
        }
        // The child's ends are the child's now.
        for end in [toChild.read, fromChild.write, errorsFromChild.write] { close(end) }
        // Each pipe on a thread of its own, so that none can fill up and stall the child.
        DispatchQueue.global().async { writeAll(input, to: toChild.write) }
        let out = Collected(fromChild.read)
        let err = Collected(errorsFromChild.read)
        let exited = OneShot<Int32>()  // the wait status
        DispatchQueue.global().async {
            var raw: Int32 = 0
            while waitpid(child, &raw, 0) < 0 && errno == EINTR {}
            exited.finish(raw)
        }
        var timedOut = false
        if exited.wait(for: timeout) == nil {
            timedOut = true
            kill(child, SIGKILL)
        }
        let raw = exited.wait()
        let elapsed = ContinuousClock.now - started
        let signaled = raw & 0x7F != 0
        // A grandchild may keep the pipes open: do not wait for it forever.
        let grace = outputGrace.fromNow
        return Output(
            status: signaled ? raw & 0x7F : (raw >> 8) & 0xFF, signaled: signaled, timedOut: timedOut,
            stdout: out.bytes(waitingUntil: grace), stderrBytes: err.bytes(waitingUntil: grace), elapsed: elapsed)
    }

    /// Writes all of `data` to `descriptor` (until the reader goes), then closes it.
    private static func writeAll(_ data: Data, to descriptor: Int32) {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { break }
                offset += written
            }
        }
        close(descriptor)
    }

    /// Everything read from a pipe until its end, by a thread of its own, which then closes it.
    /// What was read so far is kept as it comes, so that a pipe a grandchild holds open still
    /// shows what the child wrote.
    private final class Collected: Sendable {
        private let data = Mutex(Data())
        private let done = OneShot<Bool>()

        init(_ descriptor: Int32) {
            DispatchQueue.global().async { [self] in
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = read(descriptor, &buffer, buffer.count)
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    data.withLock { $0.append(contentsOf: buffer[0..<count]) }
                }
                close(descriptor)
                done.finish(true)
            }
        }

        func bytes(waitingUntil deadline: DispatchTime) -> Data {
            _ = done.wait(until: deadline)
            return data.withLock { $0 }
        }
    }
}
