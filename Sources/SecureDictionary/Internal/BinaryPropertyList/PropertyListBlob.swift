#if canImport(FoundationEssentials)
    package import FoundationEssentials
#else
    package import Foundation
#endif

/// The binary property list SecureDictionary stores, for `secure-dict export` and `import` and
/// the tests (whose support product hands it to the reliability suite and the benchmark as
/// `BinaryPropertyListCoding`).
///
/// ```swift
/// let blob = try PropertyListBlob.encode(settings.snapshot)     // bplist00…
/// let entries = try PropertyListBlob.decode(blob)               // hostile-input safe
/// ```
///
/// ``BinaryPropertyList``'s codec with a load's limits, reading the caller's bytes in place (no
/// copy of a secret left to wipe).
package enum PropertyListBlob {
    /// - Throws: ``SecureDictionaryError/tooLarge(size:limit:)``,
    ///   ``SecureDictionaryError/invalidValue(reason:)``.
    package static func encode(
        _ entries: [String: PropertyListValue],
        maximumSize: Int = SecureDictionary.Options.defaultMaximumSize
    ) throws(SecureDictionaryError) -> Data {
        var bytes = try BinaryPropertyList.encode(entries, limits: PropertyListLimits(maximumSize: maximumSize))
        defer { Wipe.bytes(&bytes) }
        return Data(bytes)
    }

    /// - Throws: ``SecureDictionaryError/corrupt(reason:)``,
    ///   ``SecureDictionaryError/unsupportedFormatVersion(_:)``,
    ///   ``SecureDictionaryError/tooLarge(size:limit:)``.
    package static func decode(
        _ data: Data,
        maximumSize: Int = SecureDictionary.Options.defaultMaximumSize
    ) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        try BinaryPropertyList.decode(data, limits: PropertyListLimits(maximumSize: maximumSize))
    }

    /// How many keys the stored blob `secret` holds, validated as a load does, nothing decoded
    /// (for `secure-dict doctor --find`, which never shows keys).
    ///
    /// ```swift
    /// let keys = try PropertyListBlob.entryCount(of: secret)   // 3
    /// ```
    ///
    /// - Throws: ``SecureDictionaryError/corrupt(reason:)``,
    ///   ``SecureDictionaryError/unsupportedFormatVersion(_:)``,
    ///   ``SecureDictionaryError/tooLarge(size:limit:)``.
    package static func entryCount(
        of secret: SecretBytes, maximumSize: Int = SecureDictionary.Options.defaultMaximumSize
    ) throws(SecureDictionaryError) -> Int {
        try secret.withUnsafeBytes { bytes throws(SecureDictionaryError) in
            try BinaryPropertyList.validate(bytes, limits: PropertyListLimits(maximumSize: maximumSize)).root.count
        }
    }
}
