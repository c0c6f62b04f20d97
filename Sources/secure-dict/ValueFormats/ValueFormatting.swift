import ArgumentParser
import FoundationEssentials
import SecureDictionary

/// The types `write --type` accepts.
enum ValueType: String, CaseIterable, ExpressibleByArgument {
    case string, int, real, bool, date, data

    init?(argument: String) {
        switch argument.lowercased() {
        case "integer": self = .int
        case "double", "float": self = .real
        case "boolean": self = .bool
        default: self.init(rawValue: argument.lowercased())
        }
    }

    /// The type in a sentence: "the key holds an integer".
    var article: String {
        switch self {
        case .string: "a string"
        case .int: "an integer"
        case .real: "a real number"
        case .bool: "a bool"
        case .date: "a date"
        case .data: "data"
        }
    }

    /// What a VALUE of this type looks like, for help and error messages.
    var expectation: String {
        switch self {
        case .string: "any text"
        case .int: "a whole number from \(Int.min) to \(UInt64.max), e.g. 42 or -7"
        case .real: "a number within ±\(Double.greatestFiniteMagnitude), e.g. 0.5 or 1e-3, or inf, -inf, nan"
        case .bool: "true or false (also yes/no, 1/0)"
        case .date:
            "an ISO 8601 date with a zone, e.g. 2026-11-22T03:57:00Z or 2026-11-22T05:57:00.25+02:00, a day (2026-11-22), or now"
        case .data: "base64, e.g. AAECAw=="
        }
    }

    /// Parses `text` as a value of this type.
    ///
    /// - Throws: a `ValidationError` that says what was expected, never what was given.
    func value(from text: String, what: String = "VALUE") throws -> PropertyListValue {
        let trimmed = text.trimmingWhitespace(andNewlines: true)
        let value: PropertyListValue? =
            switch self {
            case .string: .string(text)
            case .int: Int(trimmed).map(PropertyListValue.integer) ?? UInt64(trimmed).map(PropertyListValue.unsignedInteger)
            case .real: Self.real(trimmed).map(PropertyListValue.real)
            case .bool:
                switch trimmed.lowercased() {
                case "true", "yes", "1": .bool(true)
                case "false", "no", "0": .bool(false)
                default: nil
                }
            case .date: trimmed.lowercased() == "now" ? .date(Date()) : ExactDate.parse(trimmed).map(PropertyListValue.date)
            case .data: Data(base64Encoded: trimmed.filter { !$0.isWhitespace }).map(PropertyListValue.data)
            }
        guard let value else { throw ValidationError("\(what) is not valid for --type \(rawValue): expected \(expectation)") }
        return value
    }

    /// A real number, or nil for text that is not one or does not fit in a `Double`: Swift
    /// reads `1e400` as infinity, which is refused unless the text says `inf` itself.
    static func real(_ text: String) -> Double? {
        guard let real = Double(text) else { return nil }
        if real.isInfinite, !text.lowercased().contains("inf") { return nil }
        return real
    }
}

/// The human-readable form of `read`: one line per entry, `key (type): value`, nested values
/// indented below their key. Strings are quoted there, and long values cut short; a value read
/// alone is printed bare and whole.
enum HumanFormat {
    /// Every entry, keys sorted.
    static func lines(_ entries: [String: PropertyListValue], indent: String = "") -> [String] {
        entries.keys.sorted().flatMap { key in
            entryLines(label: safeLabel(key), entries[key]!, indent: indent)
        }
    }

    /// A value read alone: bare scalars (a string as it is, data as base64), or the indented
    /// entries of an array or dictionary.
    static func bare(_ value: PropertyListValue) -> String {
        switch value {
        case .string(let string): string
        case .array(let array): elementLines(array, indent: "").joined(separator: "\n")
        case .dictionary(let dictionary): lines(dictionary).joined(separator: "\n")
        default: scalar(value)
        }
    }

    private static func entryLines(label: String, _ value: PropertyListValue, indent: String) -> [String] {
        switch value {
        case .array(let array):
            ["\(indent)\(label) (array, \(count(array.count, "element"))):"]
                + elementLines(array, indent: indent + "  ")
        case .dictionary(let dictionary):
            ["\(indent)\(label) (dictionary, \(count(dictionary.count, "entry", "entries"))):"]
                + lines(dictionary, indent: indent + "  ")
        case .data(let data) where data.count > longestShown * 3 / 4:
            // Not the whole base64 (4 MB on one line for 3 MB): its start.
            ["\(indent)\(label) (data, \(count(data.count, "byte"))): \(data.prefix(48).base64EncodedString())\(shortened)"]
        case .data(let data):
            ["\(indent)\(label) (data, \(count(data.count, "byte"))): \(scalar(value))"]
        case .string(let string) where string.count > longestShown:
            // The start, quoted, without its closing quote.
            [
                "\(indent)\(label) (string, \(count(string.count, "character"))): \(quoted(String(string.prefix(64))).dropLast())\(shortened)"
            ]
        default:
            ["\(indent)\(label) (\(value.typeName)): \(scalar(value))"]
        }
    }

    /// The longest value shown whole in a listing (characters of its text); a longer one shows
    /// its start and ``shortened``. A value read alone is never cut.
    static let longestShown = 160

    /// What follows a value cut short: how to get it whole.
    static let shortened = "… (shortened: 'read KEY', --json or 'export' gives it whole)"

    private static func elementLines(_ array: [PropertyListValue], indent: String) -> [String] {
        array.enumerated().flatMap { index, element in entryLines(label: "[\(index)]", element, indent: indent) }
    }

    /// A scalar as text; strings quoted (JSON escapes), so that every entry stays on one line.
    private static func scalar(_ value: PropertyListValue) -> String {
        switch value {
        case .string(let string): quoted(string)
        case .integer(let integer): String(integer)
        case .unsignedInteger(let integer): String(integer)
        case .real(let real): real.isNaN ? TypedValue.nonFiniteText(real) : real.description
        case .bool(let bool): bool ? "true" : "false"
        case .date(let date):
            ExactDate.format(date) ?? "\(date.timeIntervalSinceReferenceDate) seconds since 2001-01-01T00:00:00Z"
        case .data(let data): data.base64EncodedString()
        case .array, .dictionary: ""
        }
    }

    /// A key as it is, unless it holds control characters or is empty: then quoted.
    private static func safeLabel(_ key: String) -> String {
        let plain =
            !key.isEmpty && !key.unicodeScalars.contains { $0.properties.generalCategory == .control }
            && !key.hasPrefix("\"") && !key.hasPrefix("[") && !key.contains(": ")
        return plain ? key : quoted(key)
    }

    private static func quoted(_ string: String) -> String {
        let data = (try? JSONEncoder.fragments.encode(string)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    private static func count(_ number: Int, _ singular: String, _ plural: String? = nil) -> String {
        "\(number) \(number == 1 ? singular : plural ?? singular + "s")"
    }
}

extension JSONEncoder {
    fileprivate static var fragments: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }
}
