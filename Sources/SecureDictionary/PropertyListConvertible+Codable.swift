#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

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
        self = try CodableBridge.decode(Self.self, from: value)
    }

    /// Encodes the value as a property-list structure.
    ///
    /// - Throws: ``SecureDictionaryError/invalidValue(reason:)`` when it cannot be encoded.
    public func propertyListValue() throws(SecureDictionaryError) -> PropertyListValue {
        try CodableBridge.encode(self)
    }
}

/// Converts between `Codable` values and ``PropertyListValue`` through Foundation's
/// property-list coders.
///
/// Safe because Foundation only ever sees bytes this library wrote itself: stored blobs are
/// decoded by the library's own hostile-input reader first, and re-encoded by its own writer
/// (no shared references, no sets) before `PropertyListDecoder` reads them.
enum CodableBridge {
    /// A root dictionary around the value, because a property list's root must be one here.
    private struct Box<Value: Codable>: Codable {
        let value: Value
    }

    static func encode<Value: Encodable & Decodable>(_ value: Value) throws(SecureDictionaryError) -> PropertyListValue {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        let data: Data
        do {
            data = try encoder.encode(Box(value: value))
        } catch {
            throw .invalidValue(reason: "\(Value.self) cannot be encoded as a property list")
        }
        let root = try PropertyListBlob.decode(data, maximumSize: .max)
        guard let stored = root["value"] else {
            throw .invalidValue(reason: "\(Value.self) encoded to nothing")
        }
        return stored
    }

    static func decode<Value: Codable>(_ type: Value.Type, from value: PropertyListValue) throws(SecureDictionaryError) -> Value {
        let data = try PropertyListBlob.encode(["value": value], maximumSize: .max)
        do {
            return try PropertyListDecoder().decode(Box<Value>.self, from: data).value
        } catch {
            throw value.mismatch(Value.self)
        }
    }
}
