public import FoundationEssentials

/// A Swift type that a typed key (``SecureDictionary/Key``) can store.
///
/// ```swift
/// struct Profile: Codable, PropertyListConvertible {   // Codable types need no code
///     var name: String
///     var joined: Date
/// }
/// extension SecureDictionary.Keys {
///     static let profile = SecureDictionary.Key<Profile?>("profile")
/// }
/// try settings.set(Profile(name: "Ada", joined: Date()), for: .profile)
/// ```
///
/// `String`, `Int`, `Double`, `Bool`, `Date`, `Data`, ``PropertyListValue``, `UUID`, `URL`,
/// integers of every width, `Float`, arrays and string-keyed dictionaries of convertible
/// values, and optionals of them conform already. A `Codable` type is stored as a property-list
/// structure, not as opaque JSON, so other plist readers still see its fields.
public protocol PropertyListConvertible: Sendable {
    /// Reads a stored value.
    ///
    /// - Throws: ``SecureDictionaryError/typeMismatch(expected:found:)`` when it is of another type.
    init(propertyListValue: PropertyListValue) throws(SecureDictionaryError)

    /// The value to store.
    ///
    /// - Throws: ``SecureDictionaryError/invalidValue(reason:)`` when it cannot be stored.
    func propertyListValue() throws(SecureDictionaryError) -> PropertyListValue
}

extension PropertyListValue {
    /// The error for a stored value that is not a `T`.
    func mismatch(_ type: Any.Type) -> SecureDictionaryError {
        .typeMismatch(expected: String(describing: type), found: typeName)
    }

    /// `unwrapped` (what an accessor of this value gave), or ``mismatch(_:)`` when it is `nil`.
    func required<T>(_ unwrapped: T?, as type: Any.Type = T.self) throws(SecureDictionaryError) -> T {
        guard let unwrapped else { throw mismatch(type) }
        return unwrapped
    }
}

extension PropertyListValue: PropertyListConvertible {
    public init(propertyListValue: PropertyListValue) { self = propertyListValue }
    public func propertyListValue() -> PropertyListValue { self }
}

extension String: PropertyListConvertible {
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        self = try value.required(value.stringValue)
    }
    public func propertyListValue() -> PropertyListValue { .string(self) }
}

extension Int: PropertyListConvertible {
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        self = try value.required(value.integerValue)
    }
    public func propertyListValue() -> PropertyListValue { .integer(self) }
}

extension Double: PropertyListConvertible {
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        self = try value.required(value.realValue)
    }
    public func propertyListValue() -> PropertyListValue { .real(self) }
}

extension Bool: PropertyListConvertible {
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        self = try value.required(value.boolValue)
    }
    public func propertyListValue() -> PropertyListValue { .bool(self) }
}

extension Date: PropertyListConvertible {
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        self = try value.required(value.dateValue)
    }
    public func propertyListValue() -> PropertyListValue { .date(self) }
}

extension Data: PropertyListConvertible {
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        self = try value.required(value.dataValue)
    }
    public func propertyListValue() -> PropertyListValue { .data(self) }
}

extension Array: PropertyListConvertible where Element: PropertyListConvertible {
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        self = try value.required(value.arrayValue, as: Self.self).map { element throws(SecureDictionaryError) in
            try Element(propertyListValue: element)
        }
    }
    public func propertyListValue() throws(SecureDictionaryError) -> PropertyListValue {
        try .array(map { element throws(SecureDictionaryError) in try element.propertyListValue() })
    }
}

extension Dictionary: PropertyListConvertible where Key == String, Value: PropertyListConvertible {
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        let entries = try value.required(value.dictionaryValue, as: Self.self)
        self = [:]
        for (key, entry) in entries { self[key] = try Value(propertyListValue: entry) }
    }
    public func propertyListValue() throws(SecureDictionaryError) -> PropertyListValue {
        var entries: [String: PropertyListValue] = [:]
        for (key, value) in self { entries[key] = try value.propertyListValue() }
        return .dictionary(entries)
    }
}

/// An optional stores its wrapped value; `nil` means "no entry" and is never stored itself.
extension Optional: PropertyListConvertible where Wrapped: PropertyListConvertible {
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        self = .some(try Wrapped(propertyListValue: value))
    }
    public func propertyListValue() throws(SecureDictionaryError) -> PropertyListValue {
        guard let self else { throw .invalidValue(reason: "nil has no stored form; it removes the entry") }
        return try self.propertyListValue()
    }
}

/// Lets generic code see whether a value is `Optional.none` (which removes an entry).
protocol OptionalProtocol {
    var isNone: Bool { get }
}

extension Optional: OptionalProtocol {
    var isNone: Bool { self == nil }
}
