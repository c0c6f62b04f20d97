public import FoundationEssentials

/// One value of a ``SecureDictionary``: the property-list types, kept apart exactly as stored.
///
/// ```swift
/// try settings.setValue("s3cr3t", forKey: "apiToken")        // .string
/// try settings.setValue(3, forKey: "retries")                 // .integer
/// try settings.setValue(.date(Date()), forKey: "expires")
/// let token = settings["apiToken"]?.stringValue
/// ```
///
/// Integers, reals and booleans never turn into one another: a value read back is the same
/// case it was written as, and equal (each case says how it is stored).
public enum PropertyListValue: Sendable, Hashable {
    /// Text; a string literal makes one (`"s3cr3t"`).
    case string(String)
    /// A signed integer; an integer literal makes one (`3`).
    case integer(Int)
    /// An integer above `Int.max` (up to `UInt64.max`), as Python's `plistlib` and Apple's
    /// writers store them (a 16-byte integer). Smaller values are always ``integer(_:)``:
    /// writing `.unsignedInteger(n)` with `n <= Int.max` throws
    /// ``SecureDictionaryError/invalidValue(reason:)``, so a value reads back as written.
    case unsignedInteger(UInt64)
    /// A floating-point number; a float literal makes one (`0.5`). Stored by its bits, so a
    /// NaN or `-0.0` reads back as written.
    case real(Double)
    /// A boolean; `true` and `false` make one. Never read as an integer.
    case bool(Bool)
    /// A point in time, at `Date`'s own precision (seconds since 2001-01-01 as a `Double`).
    case date(Date)
    /// Bytes.
    case data(Data)
    /// An ordered list of values; an array literal makes one (`["a", 1]`).
    case array([PropertyListValue])
    /// Values by string key; a dictionary literal makes one (`["retries": 3]`).
    case dictionary([String: PropertyListValue])
}

extension PropertyListValue {
    /// The string, when this is `.string`; otherwise `nil`.
    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }

    /// The integer, when this is `.integer`; otherwise `nil` (a real or bool is not converted).
    public var integerValue: Int? { if case .integer(let value) = self { value } else { nil } }

    /// The value of ``integer(_:)`` (when not negative) or ``unsignedInteger(_:)`` as a `UInt64`.
    public var unsignedIntegerValue: UInt64? {
        switch self {
        case .integer(let value): value >= 0 ? UInt64(value) : nil
        case .unsignedInteger(let value): value
        default: nil
        }
    }

    /// The real, when this is `.real`; otherwise `nil` (an integer is not converted).
    public var realValue: Double? { if case .real(let value) = self { value } else { nil } }

    /// The boolean, when this is `.bool`; otherwise `nil`.
    public var boolValue: Bool? { if case .bool(let value) = self { value } else { nil } }

    /// The date, when this is `.date`; otherwise `nil`.
    public var dateValue: Date? { if case .date(let value) = self { value } else { nil } }

    /// The bytes, when this is `.data`; otherwise `nil`.
    public var dataValue: Data? { if case .data(let value) = self { value } else { nil } }

    /// The elements, when this is `.array`; otherwise `nil`.
    public var arrayValue: [PropertyListValue]? { if case .array(let value) = self { value } else { nil } }

    /// The entries, when this is `.dictionary`; otherwise `nil`.
    public var dictionaryValue: [String: PropertyListValue]? { if case .dictionary(let value) = self { value } else { nil } }

    /// The name of this value's type, for messages that must not show the value itself.
    public var typeName: String {
        switch self {
        case .string: "string"
        case .integer, .unsignedInteger: "integer"
        case .real: "real"
        case .bool: "bool"
        case .date: "date"
        case .data: "data"
        case .array: "array"
        case .dictionary: "dictionary"
        }
    }
}

extension PropertyListValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension PropertyListValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .integer(value) }
}

extension PropertyListValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .real(value) }
}

extension PropertyListValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension PropertyListValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: PropertyListValue...) { self = .array(elements) }
}

extension PropertyListValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, PropertyListValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension PropertyListValue: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The type only, e.g. `<string>`: never the value, which may be a secret.
    public var description: String { "<\(typeName)>" }
    /// The type only, and that the value is redacted.
    public var debugDescription: String { "PropertyListValue(<\(typeName)>, redacted)" }
    /// The type only: `dump()` and debuggers show no value.
    public var customMirror: Mirror { Mirror(self, children: ["type": typeName], displayStyle: .enum) }
}
