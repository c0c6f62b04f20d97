/// A subcommand's arguments: flags that take a value, flags that do not, and file names; the
/// one parser of every `sd-benchmark` command line.
///
/// ```swift
/// let flags = try Flags(arguments, values: ["--out"], switches: ["--quick"])
/// if flags.help { print(usage); return }
/// let out = flags.values["--out"]
/// ```
struct Flags {
    /// Each flag of `values` given, with its value (the last one when given twice).
    var values: [String: String] = [:]
    /// The flags of `switches` given.
    var switches: Set<String> = []
    /// The arguments that are no flag, in order.
    var files: [String] = []
    /// Whether `-h` or `--help` was given.
    var help = false

    /// - Throws: `UsageError` for an unknown flag, a flag without its value, or a file name
    ///   when `files` is false.
    init(_ arguments: [String], values valueFlags: Set<String> = [], switches switchFlags: Set<String> = [], files: Bool = false)
        throws
    {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            if argument == "-h" || argument == "--help" {
                help = true
            } else if switchFlags.contains(argument) {
                switches.insert(argument)
            } else if valueFlags.contains(argument) {
                guard let value = remaining.popFirst() else { throw UsageError("\(argument) needs a value") }
                values[argument] = value
            } else if files && !argument.hasPrefix("-") {
                self.files.append(argument)
            } else {
                throw UsageError("unknown argument '\(argument)'")
            }
        }
    }

    /// The value of `flag` as a number of at least `minimum`, else `fallback` when not given.
    ///
    /// - Throws: `UsageError` when the value is not such a number.
    func number(_ flag: String, atLeast minimum: Double, else fallback: Double) throws -> Double {
        guard let text = values[flag] else { return fallback }
        guard let number = Double(text), number >= minimum else {
            throw UsageError("\(flag) needs a number ≥ \(Format.number(minimum))")
        }
        return number
    }
}
