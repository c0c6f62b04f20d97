import ArgumentParser
import FoundationEssentials
import SecureDictionary

/// What `secure-dict exec` puts into COMMAND's environment: which variable holds which key,
/// and each value as environment text.
///
/// ```swift
/// let request = try ExecVariables.Request(parsing: "API_TOKEN=apiToken")   // --env
/// ExecVariables.name(forKey: "db-password", prefix: "APP_")                 // "APP_DB_PASSWORD"
/// try ExecVariables.text(of: .integer(3), key: "retries", dataAsBase64: false)  // "3"
/// ```
///
/// Messages name keys and variables (the caller typed them, or asked for every key with
/// `--all-with-prefix`), never a value.
enum ExecVariables {
    /// One `--env VAR=KEY` or `--file VAR=KEY`: the variable, the key whose value it holds,
    /// and how (the value itself, or the path of a sealed in-memory file holding it).
    struct Request: Equatable {
        let variable: String
        let key: String
        let option: Option

        /// How a variable holds its key's value.
        enum Option: String, Equatable {
            /// The value as environment text.
            case env
            /// The path of an in-memory file holding the value (``SealedValueFile``).
            case file
        }

        /// Parses `VAR=KEY`: the variable is everything before the first `=`, the key
        /// everything after it (a key may hold `=`).
        ///
        /// - Throws: a `ValidationError` when there is no `=`, the key is empty, or VAR is
        ///   not a valid variable name.
        init(parsing text: String, option: Option = .env) throws(ValidationError) {
            let named = "--\(option.rawValue)"
            guard let equals = text.firstIndex(of: "=") else {
                throw ValidationError("\(named) takes VAR=KEY (the variable, '=', then the key whose value it gets)")
            }
            let variable = String(text[..<equals])
            let key = String(text[text.index(after: equals)...])
            guard ExecVariables.isValidName(variable) else {
                throw ValidationError("\(named): \(ExecVariables.invalidName(variable))")
            }
            guard !key.isEmpty else { throw ValidationError("\(named) \(variable)= names no key: give VAR=KEY") }
            self.variable = variable
            self.key = key
            self.option = option
        }
    }

    /// Where a variable's value comes from, for messages.
    enum Source: Equatable {
        /// `--env VAR=KEY` or `--file VAR=KEY`.
        case requested(key: String, option: Request.Option)
        /// A key that `--all-with-prefix` maps to the variable.
        case prefixed(key: String)

        var key: String {
            switch self {
            case .requested(let key, _), .prefixed(let key): key
            }
        }

        /// "--env VAR=KEY", or "key 'KEY' (--all-with-prefix)".
        func described(as variable: String) -> String {
            switch self {
            case .requested(let key, let option): "--\(option.rawValue) \(variable)=\(VisibleText.escaped(key))"
            case .prefixed(let key): "key \(ExecVariables.quoted(key)) (--all-with-prefix)"
            }
        }
    }

    /// A portable environment variable name: a letter or `_`, then letters, digits and `_`
    /// (ASCII), as POSIX shells accept in `export NAME=…`.
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || isLetter(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || isLetter($0) || ("0"..."9").contains($0) }
    }

    /// Why `name` cannot be a variable, with the rule.
    static func invalidName(_ name: String) -> String {
        "\(name.isEmpty ? "an empty name" : VisibleText.escaped(name)) is not a valid environment variable name "
            + "(a letter or '_', then letters, digits and '_')"
    }

    /// The variable `--all-with-prefix` gives `key`: `prefix`, then the key in upper case,
    /// each character other than an ASCII letter, digit or `_` as `_` (`db-password` with
    /// `APP_` is `APP_DB_PASSWORD`; `apiToken` is `APP_APITOKEN`).
    static func name(forKey key: String, prefix: String) -> String {
        var name = prefix
        for scalar in key.unicodeScalars {
            switch scalar {
            case "a"..."z": name.unicodeScalars.append(Unicode.Scalar(scalar.value - 32)!)
            case "A"..."Z", "0"..."9", "_": name.unicodeScalars.append(scalar)
            default: name += "_"
            }
        }
        return name
    }

    /// The namespace `--all-with-prefix` keeps every variable in: the prefix up to a `_`
    /// (`APP_` for `APP_`, `PG_` for `PG`). The dictionary's keys decide only what comes after
    /// it, so no key can make a variable that means something else to COMMAND (`PATH` from
    /// the prefix `P` and the key `ATH`, `PYTHONPATH` from `PY`, `LD_PRELOAD` from `L`).
    static func namespace(ofPrefix prefix: String) -> String {
        prefix.hasSuffix("_") ? prefix : prefix + "_"
    }

    /// Every variable with its source: `requests` first, then (with a prefix) every key of
    /// `keys`, sorted. Variables in `inherited` are replaced, as `env VAR=… COMMAND` does.
    ///
    /// - Throws: a usage failure when a key's variable lies outside the prefix's
    ///   ``namespace(ofPrefix:)`` (naming the keys and the rule), or when two sources would
    ///   set one variable (never one silently over the other).
    static func plan(requests: [Request], prefix: String?, keys: [String]) throws(CommandFailure) -> [(
        variable: String, source: Source
    )] {
        var planned = requests.map { (variable: $0.variable, source: Source.requested(key: $0.key, option: $0.option)) }
        if let prefix {
            let prefixed = keys.sorted().map { (variable: name(forKey: $0, prefix: prefix), source: Source.prefixed(key: $0)) }
            try checkNamespace(prefixed, prefix: prefix)
            planned += prefixed
        }
        var seen: [String: Source] = [:]
        for (variable, source) in planned {
            if let first = seen[variable] {
                throw .usage(
                    """
                    \(first.described(as: variable)) and \(source.described(as: variable)) would both set \(variable): nothing was run; \
                    rename one of the keys, or name the variables one by one with --env VAR=KEY or --file VAR=KEY
                    """)
            }
            seen[variable] = source
        }
        return planned
    }

    /// Refuses the keys whose variables lie outside the namespace of `prefix`: a dictionary's
    /// keys, which anyone who can write the dictionary chooses, never decide COMMAND's `PATH`.
    private static func checkNamespace(
        _ prefixed: [(variable: String, source: Source)], prefix: String
    ) throws(CommandFailure) {
        let namespace = namespace(ofPrefix: prefix)
        let outside = prefixed.filter { !$0.variable.hasPrefix(namespace) }
        guard let first = outside.first else { return }
        let shown = outside.prefix(3).map { "key \(quoted($0.source.key)) would be \($0.variable)" }
        let more = outside.count > 3 ? " (and \(outside.count - 3) more key(s))" : ""
        throw .usage(
            """
            --all-with-prefix \(prefix): \(shown.joined(separator: ", "))\(more), outside the prefix's namespace \
            \(namespace): nothing was run. Every variable of --all-with-prefix starts with the prefix and '_', so that \
            no key of the dictionary can choose a variable such as PATH: give --all-with-prefix \(namespace) (for \
            \(namespace)\(first.variable.dropFirst(prefix.count))), or name each variable you mean to set with --env VAR=KEY
            """)
    }

    /// `value` as the text of an environment variable: the same text as `read KEY` prints
    /// (a string as it is; an integer, a real or a bool as their text; a date in ISO 8601,
    /// UTC), data as base64 only with `dataAsBase64`.
    ///
    /// - Throws: a usage failure naming `key` and its type for data (without `dataAsBase64`),
    ///   arrays, dictionaries, a string holding NUL and a date outside the years 1–9999.
    static func text(of value: PropertyListValue, key: String, dataAsBase64: Bool) throws(CommandFailure) -> String {
        let holds = "key \(quoted(key)) holds"
        let nothingRun = "nothing was run"
        switch value {
        case .string(let string) where string.unicodeScalars.contains("\0"):
            throw .usage("\(holds) a string with a NUL character, which no environment variable can hold: \(nothingRun)")
        case .data where !dataAsBase64:
            throw .usage("\(holds) data, which is bytes, not text: \(nothingRun); give --data-as-base64 to have it as base64")
        case .array, .dictionary:
            throw .usage(
                """
                \(holds) \(value.typeName == "array" ? "an array" : "a dictionary"), which has no environment text: \
                \(nothingRun); name only keys of single values (string, number, bool, date)
                """)
        case .date(let date) where ExactDate.format(date) == nil:
            throw .usage("\(holds) a date outside the years 1–9999, which ISO 8601 cannot write: \(nothingRun)")
        default:
            return HumanFormat.bare(value)
        }
    }

    /// `value` as the bytes of a `--file` variable's file: data as it is, a string in UTF-8
    /// (NUL included), any other single value as ``text(of:key:dataAsBase64:)`` gives it.
    ///
    /// - Throws: a usage failure naming `key` and its type for arrays and dictionaries.
    static func fileBytes(of value: PropertyListValue, key: String) throws(CommandFailure) -> [UInt8] {
        switch value {
        case .data(let data): Array(data)
        case .string(let string): Array(string.utf8)
        default: Array(try text(of: value, key: key, dataAsBase64: false).utf8)
        }
    }

    /// A key as messages show it: quoted, with the characters a terminal would hide escaped.
    static func quoted(_ key: String) -> String {
        let escaped = VisibleText.escaped(key)
        return escaped.hasPrefix("\"") ? escaped : "'\(escaped)'"
    }

    private static func isLetter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }
}
