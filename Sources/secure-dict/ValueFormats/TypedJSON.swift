import FoundationEssentials
import SecureDictionary

/// The typed JSON form of `read --json` and `export --format json`, read back by `import`.
///
/// Every value is an object `{"type": T, "value": V}`, so that integer, real and bool stay
/// apart and dates and data keep every bit:
///
/// | type | value |
/// | --- | --- |
/// | `string` | a JSON string |
/// | `integer` | a JSON number without fraction (64-bit) |
/// | `real` | a JSON number, or `"inf"`, `"-inf"`, `"nan"`; any other NaN as `"nan(0x…)"`, its 64 bits in hex, so that its payload survives |
/// | `bool` | `true` or `false` |
/// | `date` | ISO 8601 in UTC with as many fraction digits as it takes to read back exactly; a number of seconds since 2001-01-01T00:00:00Z for dates outside the years 1–9999 |
/// | `data` | base64 |
/// | `array` | a JSON array of typed values |
/// | `dictionary` | a JSON object of typed values |
///
/// A whole dictionary is a JSON object of typed values, keys sorted.
enum TypedJSON {
    /// The short description of the form shown in `--help`.
    static let helpSummary = """
        JSON form (read --json, export, import): every value is {"type": T, "value": V} with \
        T one of string, integer, real, bool, date, data, array, dictionary. Integers are \
        whole JSON numbers; reals are numbers or "inf", "-inf", "nan" (a NaN with a payload: \
        "nan(0x" and its 64 bits in hex, e.g. "nan(0x7ff8000000000001)"); dates are ISO 8601 in \
        UTC with the fraction digits needed to read back exactly (e.g. \
        "2026-11-22T03:57:00.123456Z"); data is base64; an array holds typed values and a \
        dictionary maps keys to typed values. A whole dictionary is an object of typed values:
          {"apiToken": {"type": "string", "value": "s3cr3t"},
           "retries":  {"type": "integer", "value": 3}}
        """

    /// A whole dictionary, pretty-printed with sorted keys and a final newline.
    static func encode(_ entries: [String: PropertyListValue]) throws -> Data {
        try finish(encoder.encode(entries.mapValues(TypedValue.init)))
    }

    /// One value, as its typed object.
    static func encode(_ value: PropertyListValue) throws -> Data {
        try finish(encoder.encode(TypedValue(value)))
    }

    /// A whole dictionary.
    ///
    /// - Throws: a ``CommandFailure/inputOutput(_:)`` whose message names the problem, never
    ///   a key or a value.
    static func decode(_ data: Data, source: String) throws(CommandFailure) -> [String: PropertyListValue] {
        do {
            let entries = try JSONDecoder().decode([String: TypedValue].self, from: data).mapValues(\.value)
            // JSONDecoder keeps one value of keys Swift treats as equal; refuse rather than drop one.
            if let collision = JSONDuplicateKeys.first(in: Array(data)) {
                throw TypedValue.FormError(
                    reason: """
                        \(collision) have the same key, or keys that are equal in Unicode canonical form \
                        (such as "é" composed and decomposed); a dictionary holds only one of them, so \
                        nothing was imported
                        """)
            }
            return entries
        } catch let error as TypedValue.FormError {
            throw .inputOutput("\(source) is not a secure-dict JSON dictionary: \(error.reason)")
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
            throw .inputOutput("\(source) is not valid JSON")
        } catch {
            throw .inputOutput(
                "\(source) is not a secure-dict JSON dictionary: every entry must be "
                    + "{\"type\": …, \"value\": …} (see secure-dict --help)")
        }
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    private static func finish(_ data: Data) -> Data { data + Data("\n".utf8) }
}

/// One value in the typed JSON form.
struct TypedValue: Codable {
    let value: PropertyListValue

    init(_ value: PropertyListValue) { self.value = value }

    /// A problem with the form, safe to show: it never holds a key or a value.
    struct FormError: Error { let reason: String }

    private enum CodingKeys: String, CodingKey { case type, value }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value.typeName, forKey: .type)
        switch value {
        case .string(let string): try container.encode(string, forKey: .value)
        case .integer(let integer): try container.encode(integer, forKey: .value)
        case .unsignedInteger(let integer): try container.encode(integer, forKey: .value)
        case .real(let real): try Self.encode(real, into: &container)
        case .bool(let bool): try container.encode(bool, forKey: .value)
        case .date(let date):
            if let text = ExactDate.format(date) {
                try container.encode(text, forKey: .value)
            } else {
                try Self.encode(date.timeIntervalSinceReferenceDate, into: &container)
            }
        case .data(let data): try container.encode(data.base64EncodedString(), forKey: .value)
        case .array(let array): try container.encode(array.map(TypedValue.init), forKey: .value)
        case .dictionary(let dictionary): try container.encode(dictionary.mapValues(TypedValue.init), forKey: .value)
        }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        func wrong(_ expected: String) -> FormError {
            FormError(reason: "a value of type \(type) must be \(expected)")
        }
        switch type {
        case "string":
            guard let string = try? container.decode(String.self, forKey: .value) else { throw wrong("a string") }
            value = .string(string)
        case "integer":
            if let integer = try? container.decode(Int.self, forKey: .value) {
                value = .integer(integer)
            } else if let integer = try? container.decode(UInt64.self, forKey: .value) {
                value = .unsignedInteger(integer)
            } else {
                throw wrong("a whole number between \(Int.min) and \(UInt64.max)")
            }
        case "real":
            guard let real = Self.decodeReal(container) else {
                throw wrong("a number, \"inf\", \"-inf\", \"nan\" or \"nan(0x\" and 16 hex digits \")\"")
            }
            value = .real(real)
        case "bool":
            guard let bool = try? container.decode(Bool.self, forKey: .value) else { throw wrong("true or false") }
            value = .bool(bool)
        case "date":
            if let text = try? container.decode(String.self, forKey: .value), let date = ExactDate.parse(text) {
                value = .date(date)
            } else if let seconds = Self.decodeReal(container) {
                value = .date(Date(timeIntervalSinceReferenceDate: seconds))
            } else {
                throw wrong("an ISO 8601 date with a zone (e.g. 2026-11-22T03:57:00Z) or seconds since 2001-01-01")
            }
        case "data":
            guard let text = try? container.decode(String.self, forKey: .value),
                let data = Data(base64Encoded: text.filter { !$0.isWhitespace })
            else { throw wrong("base64") }
            value = .data(data)
        case "array":
            do {
                value = .array(try container.decode([TypedValue].self, forKey: .value).map(\.value))
            } catch is DecodingError {
                throw wrong("an array of typed values")
            }
        case "dictionary":
            do {
                value = .dictionary(try container.decode([String: TypedValue].self, forKey: .value).mapValues(\.value))
            } catch is DecodingError {
                throw wrong("an object of typed values")
            }
        default:
            throw FormError(reason: "unknown type (expected string, integer, real, bool, date, data, array or dictionary)")
        }
    }

    private static func encode(_ real: Double, into container: inout KeyedEncodingContainer<CodingKeys>) throws {
        if real.isFinite {
            try container.encode(real, forKey: .value)
        } else {
            try container.encode(nonFiniteText(real), forKey: .value)
        }
    }

    /// `inf`, `-inf`, `nan` for the NaN that Swift's `.nan` is, or `nan(0x7ff8000000000001)`
    /// (all 64 bits) for any other NaN: its sign and payload are kept.
    static func nonFiniteText(_ real: Double) -> String {
        guard real.isNaN else { return real > 0 ? "inf" : "-inf" }
        guard real.bitPattern != Double.nan.bitPattern else { return "nan" }
        let digits = String(real.bitPattern, radix: 16)
        return "nan(0x" + String(repeating: "0", count: 16 - digits.count) + digits + ")"
    }

    /// The real that ``nonFiniteText(_:)`` wrote, or nil.
    static func nonFinite(_ text: String) -> Double? {
        switch text {
        case "inf": return .infinity
        case "-inf": return -.infinity
        case "nan": return .nan
        default:
            guard text.hasPrefix("nan(0x"), text.hasSuffix(")"), text.utf8.count == 23,
                text.dropFirst(6).dropLast().allSatisfy(\.isHexDigit), let bits = UInt64(text.dropFirst(6).dropLast(), radix: 16)
            else { return nil }
            let real = Double(bitPattern: bits)
            return real.isNaN ? real : nil
        }
    }

    private static func decodeReal(_ container: KeyedDecodingContainer<CodingKeys>) -> Double? {
        // A number too large for a Double (1e400) is refused, not read as infinity.
        if let real = try? container.decode(Double.self, forKey: .value) { return real.isFinite ? real : nil }
        return (try? container.decode(String.self, forKey: .value)).flatMap(nonFinite)
    }
}
