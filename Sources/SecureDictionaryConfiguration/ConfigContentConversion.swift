import Configuration
import SecureDictionary

/// How a stored value becomes the configuration content a reader asked for: the table in
/// <doc:SecureDictionaryConfiguration#Types>.
enum ConfigContentConversion {
    /// `value` as content of `type`.
    ///
    /// - Throws: `SecureDictionaryError.typeMismatch(expected:found:)` naming the two types
    ///   (never the key or the value) when `value` does not convert to `type`.
    static func content(of value: PropertyListValue, as type: ConfigType) throws(SecureDictionaryError) -> ConfigContent {
        func elements<Element>(_ convert: (PropertyListValue) -> Element?) throws(SecureDictionaryError) -> [Element] {
            guard case .array(let stored) = value else { throw .typeMismatch(expected: type.rawValue, found: value.typeName) }
            return try stored.map { element throws(SecureDictionaryError) in
                guard let converted = convert(element) else {
                    throw .typeMismatch(expected: type.rawValue, found: "an array element of type \(element.typeName)")
                }
                return converted
            }
        }
        func scalar<Scalar>(_ converted: Scalar?) throws(SecureDictionaryError) -> Scalar {
            guard let converted else { throw .typeMismatch(expected: type.rawValue, found: value.typeName) }
            return converted
        }
        switch type {
        case .string: return .string(try scalar(value.stringValue))
        case .int: return .int(try scalar(integer(value)))
        case .double: return .double(try scalar(real(value)))
        case .bool: return .bool(try scalar(value.boolValue))
        case .bytes: return .bytes(try scalar(value.dataValue.map { [UInt8]($0) }))
        case .stringArray: return .stringArray(try elements(\.stringValue))
        case .intArray: return .intArray(try elements(integer))
        case .doubleArray: return .doubleArray(try elements(real))
        case .boolArray: return .boolArray(try elements(\.boolValue))
        case .byteChunkArray: return .byteChunkArray(try elements { $0.dataValue.map { [UInt8]($0) } })
        }
    }

    /// An integer, or a real holding an integer exactly.
    private static func integer(_ value: PropertyListValue) -> Int? {
        switch value {
        case .integer(let integer): integer
        case .unsignedInteger(let integer): Int(exactly: integer)
        case .real(let real): Int(exactly: real)
        default: nil
        }
    }

    /// A real, or an integer that a `Double` holds exactly.
    private static func real(_ value: PropertyListValue) -> Double? {
        switch value {
        case .real(let real): real
        case .integer(let integer): Double(exactly: integer)
        case .unsignedInteger(let integer): Double(exactly: integer)
        default: nil
        }
    }
}
