#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Replaces this process with a command (`execve(2)`), which then starts with the signals
/// ignored and blocked that this process was started with, none that a library ignored since
/// (GLib ignores SIGPIPE for its sockets: `yes | head` would end otherwise). The descriptors
/// the libraries open close on exec (each opens them `O_CLOEXEC`: the CLI suite's
/// `theCommandStartsWithTheSignalsAndDescriptorsTheToolWasGiven` fails when one does not);
/// those this process was given stay open.
///
/// ```swift
/// let replacement = ProcessReplacement.capture()      // first, before any library call
/// …
/// let failure = replacement.replace(with: ["./deploy.sh"], adding: [("API_TOKEN", token)])
/// printError(failure.message)                          // only when the command cannot start
/// throw ExitCode(failure.status)                       // 126, or 127 when it was not found
/// ```
struct ProcessReplacement {
    /// The signals ignored at the start.
    private let ignored: Set<Int32>
    /// The calling thread's signal mask at the start.
    private let mask: sigset_t

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
        return ProcessReplacement(ignored: ignored, mask: mask)
    }

    /// Replaces this process with `command` (a path, or a name looked up in `$PATH` as a
    /// shell does), whose environment is this process's with `variables` added (replacing
    /// variables of the same names). Returns only when it could not: the exit status (127 not
    /// found, 126 cannot be run) and a message naming COMMAND, never a variable's value.
    func replace(with command: [String], adding variables: [(name: String, value: String)]) -> (status: Int32, message: String) {
        let names = Set(variables.map { Array($0.name.utf8) })
        let kept = Self.environment().filter { entry in
            !names.contains(UnsafeBufferPointer(start: entry, count: strcspn(entry, "=")).map { UInt8(bitPattern: $0) })
        }
        let added = variables.map { strdup("\($0.name)=\($0.value)")! }
        let environment = kept + added
        let arguments = command.map { strdup($0) }
        defer {
            // Not replaced: wipe the values' copies.
            for entry in added { explicit_bzero(entry, strlen(entry)) }
        }
        restoreStart()
        let code = Self.execute(command[0], arguments + [nil], environment + [nil])
        let what = shellQuoted(command[0])
        return code == ENOENT
            ? (127, "\(what): command not found (nothing was run)")
            : (126, "\(what) cannot be run: \(String(cString: strerror(code)))")
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
        let folders = (getenv("PATH").map { String(cString: $0) } ?? "/bin:/usr/bin").split(
            separator: ":", omittingEmptySubsequences: false)
        let candidates = program.contains("/") ? [program] : folders.map { $0.isEmpty ? program : "\($0)/\(program)" }
        var failure = ENOENT
        for path in candidates {
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
