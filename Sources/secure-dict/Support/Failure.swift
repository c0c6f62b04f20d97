import ArgumentParser
import FoundationEssentials
import SecureDictionary
import SecureDictionaryFileStore

/// The exit codes of `secure-dict`, documented in the root command's help.
///
/// Usage errors keep argument-parser's own code, `ExitCode.validationFailure` (64, `EX_USAGE`).
enum ExitStatus {
    /// No such key, or no such dictionary.
    static let notFound = ExitCode(1)
    /// The keyring failed: locked, unavailable, timed out, corrupt item…
    static let keyringError = ExitCode(3)
    /// A file or standard input could not be read or written, holds no valid dictionary, or
    /// holds more than a dictionary can store (`write`'s value, `import`'s file, a stored
    /// dictionary above `--maximum-size`).
    static let inputOutputError = ExitCode(4)
}

/// A failure that ends a command with one line on standard error and a documented exit code.
///
/// Messages never hold a value: only application IDs, dictionary names, file paths, the
/// library's own (safe) error descriptions, and a key where the command line named it (`read
/// KEY`, `--env VAR=KEY`) or asked for every key (`exec --all-with-prefix`).
enum CommandFailure: Error {
    /// Exit 1.
    case notFound(String)
    /// Exit 3.
    case keyring(SecureDictionaryError, hint: String? = nil)
    /// Exit 4.
    case inputOutput(String)
    /// Exit 64, argument-parser's code for usage errors: for those found only while running
    /// (argument-parser would print the root command's usage after them, which misleads).
    case usage(String)
}

/// A subcommand whose failures all end the same way: one line on standard error and the
/// documented exit code.
///
/// ```swift
/// struct Read: ReportingCommand {
///     func perform() throws { … throw CommandFailure.notFound("no such key …") }
/// }
/// ```
///
/// `perform()` may throw a ``CommandFailure``, a `SecureDictionaryError` or a
/// `ValidationError`; `run()` (argument-parser's entry point) reports it.
protocol ReportingCommand: ParsableCommand {
    func perform() throws
}

extension ReportingCommand {
    func run() throws { try reportingFailures(perform) }
}

/// Runs a command's body, turning every failure into one line on stderr and its exit code.
///
/// A `ValidationError` thrown while running is a usage error too (exit 64), printed without
/// the usage line, which argument-parser would take from the root command.
func reportingFailures(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let failure as CommandFailure {
        switch failure {
        case .notFound(let message):
            printError(message)
            throw ExitStatus.notFound
        case .keyring(let error, let hint):
            try report(error, hint: hint)
        case .inputOutput(let message):
            printError(message)
            throw ExitStatus.inputOutputError
        case .usage(let message):
            printError(message)
            throw ExitCode.validationFailure
        }
    } catch let error as ValidationError {
        printError(error.message)
        throw ExitCode.validationFailure
    } catch let error as SecureDictionaryError {
        try report(error, hint: nil)
    } catch let exit as ExitCode {
        throw exit
    } catch {
        // Not expected (e.g. Foundation failing to encode the output); never exit 1, which
        // means "not found".
        printError("cannot produce the output: \(localizedDescription(of: error))")
        throw ExitStatus.inputOutputError
    }
}

private func report(_ error: SecureDictionaryError, hint: String?) throws -> Never {
    switch error {
    case .invalidName(let reason):
        // Names are checked before any keyring call; this is a usage error.
        printError("invalid name: \(reason)")
        throw ExitCode.validationFailure
    case .tooLarge:
        // More than a dictionary can store is the input's size, never the keyring's failure:
        // exit 4 wherever it comes from (the README's table).
        printError(message(for: error, hint: hint))
        throw ExitStatus.inputOutputError
    default:
        printError(message(for: error, hint: hint))
        throw ExitStatus.keyringError
    }
}

/// The library's description (what happened, then the fix where it happened), completed with
/// what the command line adds: an option that helps (`hint` replaces it). Where no keyring
/// answers, the fix speaks of `--store` options, not of the library's types.
func message(for error: SecureDictionaryError, hint: String?) -> String {
    let context = ErrorContext.current
    if case .typeMismatch(let expected, let found) = error {
        return [TypeMismatchMessage.text(expected: expected, found: found), hint].compactMap { $0 }.joined(separator: " ")
    }
    if let noKeyring = noKeyringMessage(for: error, context) {
        return [noKeyring, hint].compactMap { $0 }.joined(separator: " ")
    }
    let advice: String? =
        switch error {
        case .timedOut:
            "Or allow more time with --timeout SECONDS."
        case .connectionLost, .cancelled:
            "Try again."
        case .unsupportedFormatVersion:
            "It was written by another tool: remove it with 'secure-dict delete --force' if you do not need it."
        case .tooLarge:
            "Nothing was written: store less, or raise the limit with --maximum-size BYTES."
        case .lockHeld:
            "Or allow it more time with --timeout SECONDS."
        case .locked where context.surroundings == .desktop && !context.unlockDialogUnavailable:
            "Or run the command again with --unlock, to be shown the keyring's unlock dialog."
        case .confirmationRequired where context.surroundings == .desktop:
            "Run the command again with --unlock, to be shown the keyring's dialog."
        default:
            nil
        }
    return [error.description, hint ?? advice].compactMap { $0 }.joined(separator: " ")
}

/// No keyring here, said to a shell user: this project's answers as options. On
/// a desktop the library's own sentence (start its keyring) says it already.
private func noKeyringMessage(for error: SecureDictionaryError, _ context: ErrorContext) -> String? {
    if let recorded = RecordedKeyringMessage.text(for: error, context) { return recorded }
    switch error {
    case .serviceUnavailable(let reason) where context.surroundings != .desktop:
        // The whole reason: the library's sentence shows its first 32 characters.
        let what =
            context.hasSessionBus
            ? "No usable keyring on the session bus (\(reason))" : SecureDictionaryError.noKeyring(reason, context)
        return context.surroundings == .ssh
            ? "\(what): over SSH, keep the dictionary in encrypted files with --store passphrase."
            : "\(what): use --store credential in a service or container (--store passphrase for a person); "
                + "for tests, run them under 'secure-dict keyring run -- COMMAND'."
    case .store(FileStoreError.noStoreAvailable(let reason) as FileStoreError):
        return "No keyring answers here (\(reason)) and --store auto has no encrypted files to use instead: "
            + "add --file-key passphrase (or credential), or use --store passphrase or --store credential."
    default:
        return nil
    }
}

/// Writes `Error: <message>` as one line to standard error, as argument-parser does.
func printError(_ message: String) {
    let line = message.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : String($0) }.joined()
    try? FileDescriptor.standardError.write(Data("Error: \(line)\n".utf8))
}

/// Writes a note (not an error) to standard error.
func printNote(_ message: String) {
    try? FileDescriptor.standardError.write(Data("\(message)\n".utf8))
}

/// What Foundation's `localizedDescription` says of `error` (which FoundationEssentials does
/// not have): a `LocalizedError`'s description, else a sentence naming the error's domain and
/// code, never its payload (which could hold a value).
func localizedDescription(of error: any Error) -> String {
    if let description = (error as? any LocalizedError)?.errorDescription { return description }
    if error is EncodingError { return "The operation could not be completed. The data isn’t in the correct format." }
    return "The operation could not be completed. (\(error._domain) error \(error._code).)"
}
