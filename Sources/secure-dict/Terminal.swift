import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Standard input and output, and the user's terminal when there is one.
enum Terminal {
    /// The largest input read from standard input or a file: far above any dictionary the
    /// keyring takes (4 MiB by default), low enough not to fill memory by mistake.
    static let inputLimit = 64 * 1024 * 1024

    static var standardInputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
    static var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Writes `text` to standard output, all of it.
    static func write(_ text: String) { write(Data(text.utf8)) }

    static func write(_ data: Data) { FileHandle.standardOutput.write(data) }

    /// A note for a person on a terminal; nothing when standard output goes to a program.
    static func noteForHumans(_ message: String) {
        if standardOutputIsTerminal { printNote(message) }
    }

    /// Everything on standard input, up to ``inputLimit``.
    static func readStandardInput() throws(CommandFailure) -> Data {
        try read(FileHandle.standardInput, source: "standard input")
    }

    /// Everything in `handle`, up to ``inputLimit`` bytes.
    static func read(_ handle: FileHandle, source: String) throws(CommandFailure) -> Data {
        var data = Data()
        do {
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
                data += chunk
                if data.count > inputLimit {
                    throw CommandFailure.inputOutput("\(source) is larger than \(inputLimit) bytes")
                }
            }
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw .inputOutput("cannot read \(source): \(error.localizedDescription)")
        }
        return data
    }

    /// Asks on the terminal for a line that is not echoed (like a password prompt).
    ///
    /// - Returns: the line without its newline, or `nil` at end of input.
    static func readHiddenLine(prompt: String) -> String? {
        FileHandle.standardError.write(Data(prompt.utf8))
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
        FileHandle.standardError.write(Data("\(question) [y/N] ".utf8))
        let answer = readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces).lowercased()
        return answer == "y" || answer == "yes"
    }
}
