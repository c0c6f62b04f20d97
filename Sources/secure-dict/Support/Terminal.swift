import FoundationEssentials
import Glibc

/// Standard input and output, and the user's terminal when there is one.
enum Terminal {
    /// The largest input read from standard input or a file: far above any dictionary the
    /// keyring takes (4 MiB by default), low enough not to fill memory by mistake.
    static let inputLimit = 64 * 1024 * 1024

    static var standardInputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
    static var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Writes `text` to standard output, all of it.
    static func write(_ text: String) throws(CommandFailure) { try write(Data(text.utf8)) }

    /// Writes `data` to standard output, all of it.
    static func write(_ data: Data) throws(CommandFailure) {
        do {
            try FileDescriptor.standardOutput.write(data)
        } catch {
            throw .inputOutput("cannot write to standard output: \(error)")
        }
    }

    /// A note for a person on a terminal; nothing when standard output goes to a program.
    static func noteForHumans(_ message: String) {
        if standardOutputIsTerminal { printNote(message) }
    }

    /// Everything on standard input, up to `limit` bytes.
    static func readStandardInput(limit: Int = inputLimit, tooLarge: String? = nil) throws(CommandFailure) -> Data {
        try read(.standardInput, source: "standard input", limit: limit, tooLarge: tooLarge)
    }

    /// Everything in `file`, up to `limit` bytes: reading stops at the first byte over it,
    /// with the failure `tooLarge` (or a message naming the limit).
    static func read(
        _ file: FileDescriptor, source: String, limit: Int = inputLimit, tooLarge: String? = nil
    ) throws(CommandFailure) -> Data {
        var data = Data()
        do {
            while true {
                let chunk = try file.read(upToCount: min(1 << 20, limit + 1 - data.count))
                if chunk.isEmpty { break }
                data += chunk
                if data.count > limit {
                    throw CommandFailure.inputOutput(tooLarge ?? "\(source) is larger than \(limit) bytes")
                }
            }
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw .inputOutput("cannot read \(source): \(error)")
        }
        return data
    }

    /// Asks on the terminal for a line that is not echoed (like a password prompt).
    ///
    /// - Returns: the line without its newline, or `nil` at end of input.
    static func readHiddenLine(prompt: String) -> String? {
        try? FileDescriptor.standardError.write(Data(prompt.utf8))
        var saved = termios()
        let hidden = tcgetattr(STDIN_FILENO, &saved) == 0
        if hidden {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            quiet.c_lflag |= tcflag_t(ECHONL)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        }
        defer { if hidden { tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved) } }
        return readLine(strippingNewline: true)
    }

    /// Asks a yes/no question on the terminal; only `y` or `yes` is a yes.
    static func confirm(_ question: String) -> Bool {
        try? FileDescriptor.standardError.write(Data("\(question) [y/N] ".utf8))
        let answer = readLine(strippingNewline: true)?.trimmingWhitespace().lowercased()
        return answer == "y" || answer == "yes"
    }
}
