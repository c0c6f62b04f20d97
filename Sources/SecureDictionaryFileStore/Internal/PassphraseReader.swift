import Glibc
import ProcessSpawning
import SecureDictionary

/// Reads one passphrase: from the controlling terminal with echo off, as `ssh` and `sudo`
/// ask, or one line from a file descriptor, for scripts.
///
/// The bytes go into one fixed buffer, wiped once copied into the returned `SecretBytes`; the
/// terminal's own line buffer is the kernel's.
enum PassphraseReader {
    static let maximumLength = 1024

    /// - Throws: ``FileStoreError/passphraseUnavailable(reason:)`` when there is no
    ///   terminal, nobody typed by the timeout, the descriptor is closed or gives an empty
    ///   line, or the passphrase is longer than 1,024 bytes.
    static func read(_ input: EncryptedFileStore.PassphraseInput, prompt: String) throws(SecureDictionaryError)
        -> SecretBytes
    {
        switch input {
        case .terminal(let timeout):
            return try fromTerminal(prompt: prompt, timeout: timeout)
        case .fileDescriptor(let descriptor):
            return try line(from: descriptor, timeout: .seconds(60), what: "descriptor \(descriptor)")
        }
    }

    private static func fromTerminal(prompt: String, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes {
        let tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard tty >= 0 else { throw .passphraseUnavailable(reason: "no terminal to ask on") }
        defer { close(tty) }
        var saved = termios()
        guard tcgetattr(tty, &saved) == 0 else { throw .passphraseUnavailable(reason: "/dev/tty is not a terminal") }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO | ECHOE | ECHOK | ECHONL)
        quiet.c_lflag |= tcflag_t(ICANON)
        TerminalRestore.arm(tty, saved)
        defer { TerminalRestore.disarm() }
        _ = Array(prompt.utf8).withUnsafeBytes { write(tty, $0.baseAddress, $0.count) }
        guard tcsetattr(tty, TCSAFLUSH, &quiet) == 0 else {
            throw .passphraseUnavailable(reason: "cannot turn the terminal's echo off")
        }
        defer {
            tcsetattr(tty, TCSAFLUSH, &saved)
            _ = write(tty, "\n", 1)
        }
        return try line(from: tty, timeout: timeout, what: "the terminal")
    }

    /// One line from `descriptor`, read a byte at a time (so that the next line stays for
    /// the next read), without its line break.
    private static func line(from descriptor: Int32, timeout: Duration, what: String) throws(SecureDictionaryError)
        -> SecretBytes
    {
        var buffer = [UInt8](repeating: 0, count: maximumLength + 2)  // the longest, and a CR before its LF
        defer { Wipe.bytes(&buffer) }
        let deadline = ContinuousClock.now.advanced(by: timeout)
        var count = 0
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw .passphraseUnavailable(reason: "nothing was typed in time") }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(clamping: left.milliseconds + 1))
            if ready == 0 { continue }
            guard count < buffer.count else { throw .passphraseUnavailable(reason: "longer than \(maximumLength) bytes") }
            // A failed poll is handled as a failed read: its errno is kept.
            let got = ready < 0 ? -1 : buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + count, 1) }
            if got < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                throw .passphraseUnavailable(reason: "\(what): \(String(cString: strerror(errno)))")
            }
            if got == 0 || buffer[count] == 10 { break }
            count += 1
        }
        if count > 0 && buffer[count - 1] == 13 { count -= 1 }  // a CR LF line
        guard count > 0 else { throw .passphraseUnavailable(reason: "\(what) gave an empty passphrase") }
        guard count <= maximumLength else { throw .passphraseUnavailable(reason: "longer than \(maximumLength) bytes") }
        return buffer.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }
}

/// Puts the terminal's echo back when the process is interrupted (Ctrl-C, SIGTERM, SIGHUP)
/// while a passphrase is asked, as `ssh` and `sudo` do: then dies of the same signal.
private enum TerminalRestore {
    nonisolated(unsafe) static var descriptor: Int32 = -1
    nonisolated(unsafe) static var saved = termios()
    nonisolated(unsafe) static var previous: [Int32: sigaction] = [:]
    static let signals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

    static func arm(_ tty: Int32, _ settings: termios) {
        saved = settings
        descriptor = tty
        for signal in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                if TerminalRestore.descriptor >= 0 { tcsetattr(TerminalRestore.descriptor, TCSAFLUSH, &TerminalRestore.saved) }
                Glibc.signal(number, SIG_DFL)
                raise(number)
            }
            var old = sigaction()
            sigaction(signal, &action, &old)
            previous[signal] = old
        }
    }

    static func disarm() {
        for (signal, old) in previous {
            var old = old
            sigaction(signal, &old, nil)
        }
        previous = [:]
        descriptor = -1
    }
}
