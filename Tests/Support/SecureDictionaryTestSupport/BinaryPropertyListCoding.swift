public import Foundation
public import SecureDictionary

/// The binary property list SecureDictionary stores, encoded and decoded as the library does
/// (deterministic, hostile-input safe): for tests, the reliability suite and the benchmark,
/// which plant and read raw blobs. Not for applications; the library keeps it to itself.
///
/// ```swift
/// let blob = try BinaryPropertyListCoding.encode(["k": "v"])     // bplist00…
/// let entries = try BinaryPropertyListCoding.decode(blob)
/// ```
public enum BinaryPropertyListCoding {
    /// - Throws: `SecureDictionaryError.tooLarge(size:limit:)`, `SecureDictionaryError.invalidValue(reason:)`.
    public static func encode(
        _ entries: [String: PropertyListValue], maximumSize: Int = SecureDictionary.Options.defaultMaximumSize
    ) throws(SecureDictionaryError) -> Data {
        try PropertyListBlob.encode(entries, maximumSize: maximumSize)
    }

    /// - Throws: `SecureDictionaryError.corrupt(reason:)`,
    ///   `SecureDictionaryError.unsupportedFormatVersion(_:)`, `SecureDictionaryError.tooLarge(size:limit:)`.
    public static func decode(
        _ data: Data, maximumSize: Int = SecureDictionary.Options.defaultMaximumSize
    ) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        try PropertyListBlob.decode(data, maximumSize: maximumSize)
    }
}
