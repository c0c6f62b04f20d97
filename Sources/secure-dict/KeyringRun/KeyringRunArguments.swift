/// `keyring run`'s command line: everything from the first word that is not one of its own
/// options is the command, `--` or not (so that `keyring run swift --version` runs swift, not
/// secure-dict's own `--version`).
///
/// ```swift
/// KeyringRunArguments.normalized(["keyring", "run", "swift", "--version"])
/// // ["keyring", "run", "--", "swift", "--version"]
/// ```
enum KeyringRunArguments {
    /// `keyring run`'s options that take a value.
    static let valued = ["--keep", "--provider", "--timeout"]

    /// `arguments` with `--` before the command, when it has none; unchanged when an option
    /// comes first that `keyring run` does not take (argument-parser then says which).
    static func normalized(_ arguments: [String]) -> [String] {
        guard arguments.count > 2, arguments[0] == "keyring", arguments[1] == "run" else { return arguments }
        var index = 2
        while index < arguments.count {
            let word = arguments[index]
            if word == "--" { return arguments }
            if valued.contains(word) {
                index += 2
            } else if valued.contains(where: { word.hasPrefix($0 + "=") }) {
                index += 1
            } else if word.hasPrefix("-") {
                return arguments  // --help, or an option it does not take
            } else {
                return Array(arguments[..<index]) + ["--"] + Array(arguments[index...])
            }
        }
        return arguments
    }
}
