import CSecretShim
import Glibc
import ProcessSpawning

/// `exec --mask`: COMMAND runs as this process's child, its standard output and error pass
/// through an ``ExecMask`` each, the signals sent to this process go on to COMMAND, and
/// COMMAND's exit code (128+N when signal N ended it) becomes this process's.
///
/// ```swift
/// let status = try MaskedCommand.run(
///     command, environment: environment, replacement: replacement, masks: values)
/// throw ExitCode(status)
/// ```
///
/// COMMAND's standard output or error that is a terminal here becomes a pseudo-terminal of
/// this process's (the same window size, kept on SIGWINCH), so a program still colours and
/// line-buffers; one that is not stays what it would be, a pipe. COMMAND's standard input,
/// descriptors and process group are this process's; the pseudo-terminals are not its
/// controlling terminal (Ctrl-C and job control stay the real terminal's). A signal the kernel
/// sends to the whole process group (a terminal's Ctrl-C) reaches COMMAND directly and is not
/// sent again; one sent to this process alone (`kill PID`) is forwarded. Job-control signals
/// (Ctrl-Z) stop both as a group.
enum MaskedCommand {
    /// Runs `command` (searched in `$PATH`) with exactly `environment`, relays its output
    /// through `masks`, and returns the status this process should exit with.
    ///
    /// - Throws: nothing after COMMAND starts; returns 126/127 with a message on standard
    ///   error when it cannot start, as `execve` would.
    static func run(
        _ command: [String], environment: [String: String], ignoring ignored: Set<Int32>,
        masks values: [(key: String, bytes: [UInt8])]
    ) -> Int32 {
        let signals = forwardSignals(except: ignored)
        guard let output = outputChannel(like: STDOUT_FILENO), let errors = outputChannel(like: STDERR_FILENO) else {
            printError("the pipes for COMMAND's output could not be made: nothing was run")
            return 126
        }
        let child: pid_t
        do {
            child = try Spawn.start(
                command[0], Array(command.dropFirst()), environment: environment,
                standardOutput: .descriptor(output.write), standardError: .descriptor(errors.write),
                searchesPath: !command[0].contains("/"), ignoring: ignored)
        } catch {
            let failure = ProcessReplacement.failure(error.code, starting: command[0])
            printError(failure.message)
            return failure.status
        }
        close(output.write)
        close(errors.write)
        var streams = [
            Stream(from: output.read, to: STDOUT_FILENO, mask: ExecMask(values: values)),
            Stream(from: errors.read, to: STDERR_FILENO, mask: ExecMask(values: values)),
        ]
        var status: Int32?
        while status == nil || streams.contains(where: \.isOpen) {
            var polled = streams.map { pollfd(fd: $0.isOpen ? $0.source : -1, events: Int16(POLLIN), revents: 0) }
            polled.append(pollfd(fd: signals, events: Int16(POLLIN), revents: 0))
            // Once both streams ended, wake now and then to reap COMMAND.
            let ready = poll(&polled, nfds_t(polled.count), streams.contains(where: \.isOpen) ? -1 : 100)
            if ready < 0 && errno != EINTR { break }
            for index in streams.indices where polled[index].revents != 0 { streams[index].relay() }
            if polled.last!.revents != 0 { forward(from: signals, to: child, resizing: streams.map(\.source)) }
            if status == nil { status = reaped(child, waiting: false) }
        }
        return status ?? reaped(child, waiting: true) ?? 1
    }

    /// One of COMMAND's output streams: read from its pipe, masked, written to ours.
    private struct Stream {
        let source: Int32
        let target: Int32
        var mask: ExecMask
        var isOpen = true

        init(from source: Int32, to target: Int32, mask: ExecMask) {
            self.source = source
            self.target = target
            self.mask = mask
        }

        /// Reads what is there and writes it masked; at the end of the stream, writes what
        /// the mask held and closes the pipe. A target that is gone (a reader that exited)
        /// closes the pipe too, so that COMMAND's next write fails as it would have.
        mutating func relay() {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            defer { buffer.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) } }
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress!, $0.count) }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { return }
            let shown =
                count > 0 ? buffer.withUnsafeBytes { mask.pass(UnsafeRawBufferPointer(rebasing: $0[0..<count])) } : mask.finish()
            if !write(shown) || count <= 0 {
                close(source)
                isOpen = false
            }
        }

        /// Writes all of `bytes`; false when the target is gone.
        private func write(_ bytes: [UInt8]) -> Bool {
            var done = 0
            while done < bytes.count {
                let wrote = bytes.withUnsafeBytes { Glibc.write(target, $0.baseAddress! + done, bytes.count - done) }
                if wrote < 0 && errno == EINTR { continue }
                if wrote <= 0 { return false }
                done += wrote
            }
            return true
        }
    }

    /// COMMAND's status as this process's exit code, once it ended.
    private static func reaped(_ child: pid_t, waiting: Bool) -> Int32? {
        var status: Int32 = 0
        while true {
            let result = waitpid(child, &status, waiting ? 0 : WNOHANG)
            if result < 0 && errno == EINTR { continue }
            guard result == child else { return nil }
            let signal = status & 0x7F
            return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
        }
    }

    /// Where COMMAND writes what `target` receives: a pseudo-terminal when `target` is a
    /// terminal, else a pipe (both close-on-exec here).
    private static func outputChannel(like target: Int32) -> (read: Int32, write: Int32)? {
        if isatty(target) == 1 {
            var replica: Int32 = -1
            let reader = sd_process_open_output_terminal(target, &replica)
            if reader >= 0 { return (reader, replica) }
        }
        return try? Spawn.pipe()
    }

    /// Forwards to `child` each signal number the handler wrote to `signals`; on SIGWINCH the
    /// pseudo-terminals among `outputs` take the real terminal's size first.
    private static func forward(from signals: Int32, to child: pid_t, resizing outputs: [Int32]) {
        var numbers = [UInt8](repeating: 0, count: 64)
        let count = numbers.withUnsafeMutableBytes { read(signals, $0.baseAddress!, $0.count) }
        for number in numbers.prefix(max(0, count)) {
            if Int32(number) == SIGWINCH {
                for (output, target) in zip(outputs, [STDOUT_FILENO, STDERR_FILENO]) {
                    _ = sd_process_copy_window_size(target, output)
                }
            }
            kill(child, Int32(number))
        }
    }

    /// Catches every signal worth forwarding but those ignored at the start (`nohup`), the
    /// job-control ones and the faults; returns the read end of the pipe the handler writes
    /// their numbers to.
    private static func forwardSignals(except ignored: Set<Int32>) -> Int32 {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return -1 }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        signalPipe = ends[1]
        let kept: Set<Int32> = [
            SIGKILL, SIGSTOP, SIGCHLD, SIGTSTP, SIGTTIN, SIGTTOU, SIGCONT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
            SIGSYS, SIGPIPE, 32, 33,  // glibc's own
        ]
        for number in Int32(1)...64 where !kept.contains(number) && !ignored.contains(number) {
            var action = sigaction()
            action.__sigaction_handler.sa_sigaction = handleSignal
            action.sa_flags = SA_SIGINFO | SA_RESTART
            sigemptyset(&action.sa_mask)
            sigaction(number, &action, nil)
        }
        return ends[0]
    }
}

/// The write end of the pipe ``MaskedCommand`` forwards signals through. Set once, before any
/// handler runs; a handler only reads it.
nonisolated(unsafe) private var signalPipe: Int32 = -1

/// Writes the signal's number to `signalPipe` unless the kernel sent it to the whole process
/// group (`si_code` > 0: a terminal's Ctrl-C, which COMMAND got too), but for SIGWINCH, whose
/// new size the pseudo-terminals must take before COMMAND reads it. Async-signal-safe.
private func handleSignal(_ number: Int32, _ info: UnsafeMutablePointer<siginfo_t>?, _: UnsafeMutableRawPointer?) {
    guard let info, info.pointee.si_code <= 0 || number == SIGWINCH else { return }
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(signalPipe, &byte, 1)
}
