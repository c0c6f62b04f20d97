public import FoundationEssentials

/// The integer types other than `Int` (they conform below). More specific than the `Codable`
/// default, which must not apply to integers, so these conversions win for every integer.
extension PropertyListConvertible where Self: FixedWidthInteger & Codable {
    /// Reads a stored integer that fits this type.
    ///
    /// - Throws: ``SecureDictionaryError/typeMismatch(expected:found:)`` for another type, or
    ///   an integer that does not fit.
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        let converted: Self? =
            switch value {
            case .integer(let integer): Self(exactly: integer)
            case .unsignedInteger(let integer): Self(exactly: integer)
            default: nil
            }
        self = try value.required(converted)
    }

    /// ``PropertyListValue/integer(_:)``, or ``PropertyListValue/unsignedInteger(_:)`` above `Int.max`.
    public func propertyListValue() -> PropertyListValue {
        if let fits = Int(exactly: self) { return .integer(fits) }
        return .unsignedInteger(UInt64(self))  // above Int.max: only UInt and UInt64 get here
    }
}

extension Int8: PropertyListConvertible {}
extension Int16: PropertyListConvertible {}
extension Int32: PropertyListConvertible {}
extension Int64: PropertyListConvertible {}
extension UInt: PropertyListConvertible {}
extension UInt8: PropertyListConvertible {}
extension UInt16: PropertyListConvertible {}
extension UInt32: PropertyListConvertible {}
extension UInt64: PropertyListConvertible {}

extension Float: PropertyListConvertible {
    /// Reads any stored real, rounded to the nearest `Float`.
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        self = try Float(value.required(value.realValue, as: Self.self))
    }

    public func propertyListValue() -> PropertyListValue { .real(Double(self)) }
}

extension UUID: PropertyListConvertible {
    /// Stored as its string form (`E621E1F8-C36C-495A-93FC-0C247A3E6E5F`), which other tools read.
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        self = try value.required(value.stringValue.flatMap(UUID.init(uuidString:)))
    }

    public func propertyListValue() -> PropertyListValue { .string(uuidString) }
}

extension URL: PropertyListConvertible {
    /// Stored as its absolute string, which other tools read.
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        self = try value.required(value.stringValue.flatMap { URL(string: $0) })
    }

    public func propertyListValue() -> PropertyListValue { .string(absoluteString) }
}
