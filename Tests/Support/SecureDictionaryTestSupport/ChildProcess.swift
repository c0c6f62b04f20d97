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
    /// Started with `posix_spawn(3)`, every pipe end closed by this function: Foundation's
    /// `Process` left three descriptors open per run (a 200-run test reached 800), and past
    /// about a thousand its `run()` read beyond a buffer (AddressSanitizer:
    /// heap-buffer-overflow in `findMaximumOpenFromProcSelfFD`) and crashed the test process.
    ///
    /// - Throws: `POSIXError` when the program cannot be started.
    public static func run(
        _ program: String, _ arguments: [String], input: Data = Data(), environment: [String: String]? = nil,
        timeout: Duration = .seconds(300)
    ) throws -> Output {
        signal(SIGPIPE, SIG_IGN)
        var pipes: [[Int32]] = []
        defer { for ends in pipes { for end in ends where end >= 0 { close(end) } } }
        for _ in 0..<3 {
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            // Neither end may leak into programs that other threads start.
            for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            pipes.append(ends)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipes[0][0], STDIN_FILENO)
        posix_spawn_file_actions_adddup2(&actions, pipes[1][1], STDOUT_FILENO)
        posix_spawn_file_actions_adddup2(&actions, pipes[2][1], STDERR_FILENO)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let variables = environment ?? ProcessInfo.processInfo.environment
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for string in argv + envp { free(string) } }
        var pid = pid_t()
        let started = ContinuousClock.now
        let result = posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .ENOENT) }
        let child = pid
        // The child's ends are the child's now.
        for (ends, childEnd) in zip(pipes.indices, [0, 1, 1]) {
            close(pipes[ends][childEnd])
            pipes[ends][childEnd] = -1
        }
        // Each pipe on a thread of its own, so that none can fill up and stall the child.
        let writer = take(&pipes[0][1])
        DispatchQueue.global().async {
            input.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(writer, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0 && errno == EINTR { continue }
                    if written <= 0 { break }
                    offset += written
                }
            }
            close(writer)
        }
        let out = Collected(take(&pipes[1][0]))
        let err = Collected(take(&pipes[2][0]))
        let exited = DispatchSemaphore(value: 0)
        let status = Mutex<Int32>(0)
        DispatchQueue.global().async {
            var raw: Int32 = 0
            while waitpid(child, &raw, 0) < 0 && errno == EINTR {}
            status.withLock { $0 = raw }
            exited.signal()
        }
        var timedOut = false
        // The whole timeout, below a second too (seconds alone made 400 ms a kill at once).
        let (seconds, attoseconds) = timeout.components
        let nanoseconds = Int(clamping: seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        if exited.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .timedOut {
            timedOut = true
            kill(child, SIGKILL)
            exited.wait()
        }
        let elapsed = ContinuousClock.now - started
        let raw = status.withLock { $0 }
        let signaled = raw & 0x7F != 0
        // A grandchild may keep the pipes open: do not wait for it forever.
        return Output(
            status: signaled ? raw & 0x7F : (raw >> 8) & 0xFF, signaled: signaled, timedOut: timedOut,
            stdout: out.bytes(waitingAtMost: .seconds(5)), stderrBytes: err.bytes(waitingAtMost: .seconds(5)),
            elapsed: elapsed)
    }

    /// The descriptor in `slot`, which this function no longer closes.
    private static func take(_ slot: inout Int32) -> Int32 {
        defer { slot = -1 }
        return slot
    }

    /// Everything read from a pipe until its end, by a thread of its own, which then closes it.
    /// What was read so far is kept as it comes, so that a pipe a grandchild holds open still
    /// shows what the child wrote.
    private final class Collected: Sendable {
        private let data = Mutex(Data())
        private let done = DispatchSemaphore(value: 0)

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
                done.signal()
            }
        }

        func bytes(waitingAtMost limit: Duration) -> Data {
            _ = done.wait(timeout: .now() + .nanoseconds(Int(clamping: limit.components.seconds * 1_000_000_000)))
            return data.withLock { $0 }
        }
    }
}
