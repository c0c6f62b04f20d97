import FoundationEssentials

/// Any `Codable` type becomes storable by declaring the conformance:
///
/// ```swift
/// enum Session: Codable, PropertyListConvertible {
///     case signedOut
///     case signedIn(user: String, until: Date)
/// }
/// ```
///
/// The value is stored as a property-list structure: a struct becomes a dictionary of its
/// coding keys, an array an array, a `Date` a date, `Data` data; `nil` optionals inside are
/// left out. Reading it back gives an equal value.
extension PropertyListConvertible where Self: Codable {
    /// Decodes the value from its stored property-list structure.
    ///
    /// - Throws: ``SecureDictionaryError/typeMismatch(expected:found:)`` when the stored
    ///   structure is not this type's.
    public init(propertyListValue value: PropertyListValue) throws(SecureDictionaryError) {
        // Foundation's decoder sees only bytes this library wrote: the stored blob was read by
        // its own hostile-input reader, and is re-encoded by its own writer (no shared
        // references, no sets).
        let data = try PropertyListBlob.encode(["value": value], maximumSize: .max)
        do {
            self = try PropertyListDecoder().decode(CodableBox<Self>.self, from: data).value
        } catch {
            throw value.mismatch(Self.self)
        }
    }

    /// Encodes the value as a property-list structure.
    ///
    /// - Throws: ``SecureDictionaryError/invalidValue(reason:)`` when it cannot be encoded.
    public func propertyListValue() throws(SecureDictionaryError) -> PropertyListValue {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        let data: Data
        do {
            data = try encoder.encode(CodableBox(value: self))
        } catch {
            throw .invalidValue(reason: "\(Self.self) cannot be encoded as a property list")
        }
        guard let stored = try PropertyListBlob.decode(data, maximumSize: .max)["value"] else {
            throw .invalidValue(reason: "\(Self.self) encoded to nothing")
        }
        return stored
    }
}

/// A root dictionary around the value, because a property list's root must be one here.
private struct CodableBox<Value: Codable>: Codable {
    let value: Value
}
