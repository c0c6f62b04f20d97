import FoundationEssentials
import Glibc
import ProcessSpawning

/// Replaces this process with a command (`execve(2)`), which then starts with the signals
/// ignored and blocked that this process was started with, none that a library ignored since
/// (GLib ignores SIGPIPE for its sockets: `yes | head` would end otherwise), and with the
/// descriptors this process was given, less the tool's own secret sources.
///
/// Descriptors: every one opened after ``capture()`` (the keyring's connections, lock files,
/// a credential file: the libraries open theirs `O_CLOEXEC` already, and the CLI suite's
/// `theCommandStartsWithTheSignalsAndDescriptorsTheToolWasGiven` fails when one does not) is
/// marked close-on-exec here too; of those given, the ones named as the tool's own secrets
/// (`--passphrase-fd`) are closed, a standard stream among them reopened on `/dev/null`,
/// and the others stay open, as COMMAND's (`4<FILE`).
///
/// ```swift
/// let replacement = ProcessReplacement.capture()      // first, before any library call
/// …
/// let failure = replacement.replace(with: ["./deploy.sh"], adding: [("API_TOKEN", token)], closing: [3])
/// printError(failure.message)                          // only when the command cannot start
/// throw ExitCode(failure.status)                       // 126, or 127 when it was not found
/// ```
struct ProcessReplacement {
    /// The signals ignored at the start.
    let ignored: Set<Int32>
    /// The calling thread's signal mask at the start.
    private let mask: sigset_t
    /// The descriptors open at the start: those this process was given.
    private let given: Set<Int32>
    /// Whether COMMAND gets only ``cleanEnvironmentNames`` of this process's environment
    /// (`exec --clean-env`), besides the variables added.
    var keepsOnlyCleanEnvironment = false

    /// What `--clean-env` keeps of this process's environment: what most programs need to
    /// find programs, files and the language of their messages.
    static let cleanEnvironmentNames: Set<String> = ["PATH", "HOME", "USER", "LANG", "TERM"]

    /// The signals there are on Linux (1…64); SIGKILL and SIGSTOP keep their default.
    private static let signals = (1...64).filter { $0 != SIGKILL && $0 != SIGSTOP }

    /// What this process was started with. Call it first, before any library runs.
    static func capture() -> ProcessReplacement {
        var ignored: Set<Int32> = []
        for number in signals {
            var action = sigaction()
            if sigaction(number, nil, &action) == 0, isIgnore(action.__sigaction_handler.sa_handler) {
                ignored.insert(number)
            }
        }
        var mask = sigset_t()
        pthread_sigmask(SIG_SETMASK, nil, &mask)
        return ProcessReplacement(ignored: ignored, mask: mask, given: Set(openDescriptors()))
    }

    /// Replaces this process with `command` (a path, or a name looked up in `$PATH` as a
    /// shell does), whose environment is this process's with `variables` added (replacing
    /// variables of the same names). Returns only when it could not: the exit status (127 not
    /// found, 126 cannot be run) and a message naming COMMAND, never a variable's value.
    /// `secrets`: the descriptors this process was given for its own secrets, which COMMAND
    /// must not get; `passing`: descriptors this process opened for COMMAND (a
    /// ``SealedValueFile``), which COMMAND inherits.
    func replace(
        with command: [String], adding variables: [(name: String, value: String)], closing secrets: [Int32] = [],
        passing made: [Int32] = []
    ) -> (status: Int32, message: String) {
        let kept = inheritedEnvironment(replacing: variables)
        let added = variables.map { strdup("\($0.name)=\($0.value)")! }
        let environment = kept + added
        let arguments = command.map { strdup($0) }
        defer {
            // Not replaced: wipe the values' copies.
            for entry in added { explicit_bzero(entry, strlen(entry)) }
        }
        restoreStart()
        closeOwnDescriptors(secrets, passing: made)
        return Self.failure(Self.execute(command[0], arguments + [nil], environment + [nil]), starting: command[0])
    }

    /// The exit status and message of a command that could not start with `errno` `code`:
    /// 127 not found, 126 cannot be run.
    static func failure(_ code: Int32, starting program: String) -> (status: Int32, message: String) {
        let what = shellQuoted(program)
        switch code {
        case ENOENT:
            return (127, "\(what): command not found (nothing was run)")
        case E2BIG:
            return (
                126,
                "\(what) cannot be run: its arguments and environment take more than the kernel allows "
                    + "(\(ArgumentSpace.total) bytes in all, \(ArgumentSpace.perString) for one variable)"
            )
        default:
            return (126, "\(what) cannot be run: \(String(cString: strerror(code)))")
        }
    }

    /// Runs `command` as this process's child instead (``MaskedCommand``), with the
    /// environment and descriptors ``replace(with:adding:closing:passing:)`` would give it,
    /// its output masked; returns the status this process exits with.
    func runMasked(
        _ command: [String], adding variables: [(name: String, value: String)], closing secrets: [Int32],
        passing made: [Int32], masks: [(key: String, bytes: [UInt8])]
    ) -> Int32 {
        var environment: [String: String] = [:]
        for entry in inheritedEnvironment(replacing: variables) {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
        }
        for (name, value) in variables { environment[name] = value }
        closeOwnDescriptors(secrets, passing: made)
        return MaskedCommand.run(command, environment: environment, ignoring: ignored, masks: masks)
    }

    /// The bytes `execve(2)` needs for `command` with `variables` added, as ``ArgumentSpace``
    /// counts them (the program's path as long as the longest `$PATH` candidate).
    func argumentBytes(for command: [String], adding variables: [(name: String, value: String)]) -> Int {
        let inherited = inheritedEnvironment(replacing: variables).map { strlen($0) + 1 }
        let added = variables.map { ArgumentSpace.entrySize(name: $0.name, value: $0.value) }
        let path = Spawn.candidates(for: command[0]).map(\.utf8.count).max() ?? 0
        return ArgumentSpace.needed(command: command, environment: inherited + added, pathLength: path)
    }

    /// This process's environment entries less those of the names of `variables` (and, with
    /// ``keepsOnlyCleanEnvironment``, less all but ``cleanEnvironmentNames``).
    func inheritedEnvironment(
        replacing variables: [(name: String, value: String)]
    ) -> [UnsafeMutablePointer<CChar>] {
        let replaced = Set(variables.map { Array($0.name.utf8) })
        let kept = Set(Self.cleanEnvironmentNames.map { Array($0.utf8) })
        return Self.environment().filter { entry in
            let name = UnsafeBufferPointer(start: entry, count: strcspn(entry, "=")).map { UInt8(bitPattern: $0) }
            return !replaced.contains(name) && (!keepsOnlyCleanEnvironment || kept.contains(name))
        }
    }

    /// Marks every descriptor opened since ``capture()`` close-on-exec but those `made` for
    /// COMMAND, and takes `secrets` (given ones) from COMMAND: closed, or a standard stream
    /// reopened on `/dev/null`.
    func closeOwnDescriptors(_ secrets: [Int32], passing made: [Int32]) {
        for descriptor in Self.openDescriptors() where !given.contains(descriptor) && !made.contains(descriptor) {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
        for descriptor in Set(secrets) where descriptor >= 0 {
            if descriptor > STDERR_FILENO {
                close(descriptor)
            } else {
                let null = open("/dev/null", O_RDWR | O_CLOEXEC)
                if null >= 0 {
                    dup2(null, descriptor)  // dup2 clears close-on-exec on the copy: COMMAND gets it
                    close(null)
                }
            }
        }
    }

    /// The descriptors open now, from `/proc/self/fd` (the listing's own is closed by then).
    private static func openDescriptors() -> [Int32] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
        return names.compactMap { Int32($0) }.filter { fcntl($0, F_GETFD) >= 0 }
    }

    /// The signals as they were at the start.
    private func restoreStart() {
        for number in Self.signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = ignored.contains(number) ? SIG_IGN : SIG_DFL
            sigaction(number, &action, nil)  // fails only for glibc's own (32, 33): left as they are
        }
        var mask = mask
        pthread_sigmask(SIG_SETMASK, &mask, nil)
    }

    /// `execve(2)` of `program`, searched in `$PATH` when it holds no '/', as `execvp(3)`
    /// does (a file without a `#!` line runs in /bin/sh). Returns the `errno` of the failure.
    private static func execute(
        _ program: String, _ arguments: [UnsafeMutablePointer<CChar>?], _ environment: [UnsafeMutablePointer<CChar>?]
    ) -> Int32 {
        var failure = ENOENT
        for path in Spawn.candidates(for: program) {
            execve(path, arguments, environment)
            switch errno {
            case ENOEXEC:
                let shell = [strdup("/bin/sh"), strdup(path)] + arguments.dropFirst()
                execve("/bin/sh", shell, environment)
                return errno
            case EACCES:
                failure = EACCES
            case ENOENT, ENOTDIR, ESTALE, ENODEV, ETIMEDOUT:
                continue
            default:
                return errno
            }
        }
        return failure
    }

    /// This process's environment entries (`environ`), as they are.
    private static func environment() -> [UnsafeMutablePointer<CChar>] {
        var entries: [UnsafeMutablePointer<CChar>] = []
        var entry = environ
        while let pointer = entry.pointee {
            entries.append(pointer)
            entry += 1
        }
        return entries
    }

    private static func isIgnore(_ handler: __sighandler_t?) -> Bool {
        guard let handler else { return false }
        return unsafeBitCast(handler, to: Int.self) == 1  // SIG_IGN
    }
}
