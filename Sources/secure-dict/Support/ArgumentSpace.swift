import Glibc

/// The room `execve(2)` gives a command's arguments and environment on Linux, so that
/// `secure-dict exec` can say which variable does not fit before anything runs (the kernel
/// only says E2BIG, "Argument list too long", for the whole call).
///
/// ```swift
/// let entry = ArgumentSpace.entrySize(name: "TOKEN", value: token)  // "TOKEN=…" and its NUL
/// if entry > ArgumentSpace.perString { /* refused: name TOKEN and the limit */ }
/// let needed = ArgumentSpace.needed(command: ["./deploy.sh"], environment: sizes)
/// if needed > ArgumentSpace.total { /* refused: the total and the limit */ }
/// ```
///
/// The limits are the kernel's (`fs/exec.c`): each string, `NAME=value` of a variable
/// included, takes at most `MAX_ARG_STRLEN`, 32 pages (131,072 bytes with 4 KiB pages) with
/// its NUL; all strings together, the program's path included, and one pointer each take at
/// most a quarter of the stack limit (`ulimit -s`), capped at 6 MiB and at least 32 pages.
enum ArgumentSpace {
    /// `MAX_ARG_STRLEN`: the most one argument or one `NAME=value` may take, its NUL included.
    static var perString: Int { 32 * pageSize }

    /// What every string and its pointer may take together: a quarter of the stack's soft
    /// limit, at most 6 MiB (three quarters of the kernel's 8 MiB `_STK_LIM`), at least 32 pages.
    static var total: Int {
        var limit = rlimit()
        // RLIM_INFINITY is all ones, which Swift does not import: its quarter is more than 6 MiB.
        let stack = getrlimit(Int32(RLIMIT_STACK.rawValue), &limit) == 0 ? limit.rlim_cur : .max
        let quarter = Int(clamping: stack / 4)
        return max(min(6 << 20, quarter), 32 * pageSize)
    }

    /// The bytes of one variable as the kernel counts it: `NAME=value` and its NUL.
    static func entrySize(name: String, value: String) -> Int {
        name.utf8.count + 1 + value.utf8.count + 1
    }

    /// What `execve(2)` of `command` needs, with environment entries of `environment` bytes
    /// each (NUL included): every string with its NUL, one pointer per argument and variable,
    /// and the program's path as `execve(2)` is given it (at most `pathLength` bytes).
    static func needed(command: [String], environment: [Int], pathLength: Int) -> Int {
        let strings = command.reduce(0) { $0 + $1.utf8.count + 1 } + environment.reduce(0, +) + pathLength + 1
        let pointers = (max(command.count, 1) + environment.count) * MemoryLayout<UnsafeRawPointer>.size
        return strings + pointers
    }

    private static var pageSize: Int { Int(sysconf(Int32(_SC_PAGESIZE))) }
}
