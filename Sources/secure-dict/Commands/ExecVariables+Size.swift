/// The kernel's size limits on COMMAND's environment (``ArgumentSpace``), checked before
/// anything runs: a value too long fails here, naming its variable and the limit, instead of
/// as "Argument list too long" from `execve(2)`, after the dictionary was read.
///
/// ```swift
/// try ExecVariables.checkSize(of: "TOKEN", text, key: "apiToken", location: location)
/// try ExecVariables.checkTotal(replacement.argumentBytes(for: command, adding: assignments))
/// ```
///
/// Messages give sizes, never a value.
extension ExecVariables {
    /// Refuses a variable whose `NAME=value` and NUL take more than `MAX_ARG_STRLEN`.
    ///
    /// - Throws: a usage failure naming the variable, its key, its size and the limit, with
    ///   the way such a value can reach COMMAND: its standard input.
    static func checkSize(of variable: String, _ text: String, key: String, location: DictionaryLocation)
        throws(CommandFailure)
    {
        let size = ArgumentSpace.entrySize(name: variable, value: text)
        let limit = ArgumentSpace.perString
        guard size > limit else { return }
        throw .usage(
            """
            \(variable) (key \(quoted(key))) would take \(size) bytes, more than the \(limit) bytes the kernel allows \
            one environment variable ('\(variable)=', the value and the final NUL; MAX_ARG_STRLEN): nothing was run; \
            give COMMAND such a value on its standard input instead: \
            secure-dict read \(location.arguments) \(shellQuoted(key)) | COMMAND
            """)
    }

    /// Refuses a command line and environment that take more than `execve(2)` allows in all.
    ///
    /// - Throws: a usage failure with the size and the limit, and what raises the limit.
    static func checkTotal(_ needed: Int) throws(CommandFailure) {
        let limit = ArgumentSpace.total
        guard needed > limit else { return }
        throw .usage(
            """
            COMMAND's arguments and environment would take \(needed) bytes, more than the \(limit) bytes the kernel \
            allows in all (a quarter of the stack limit, 'ulimit -s', at most 6 MiB): nothing was run; give \
            fewer or smaller variables, or raise 'ulimit -s'
            """)
    }
}
