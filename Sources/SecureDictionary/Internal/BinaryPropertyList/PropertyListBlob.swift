package import FoundationEssentials

/// The binary property list SecureDictionary stores, for `secure-dict export` and `import` and
/// the tests (whose support product hands it to the reliability suite and the benchmark as
/// `BinaryPropertyListCoding`).
///
/// ``BinaryPropertyList``'s codec with a load's limits, reading the caller's bytes in place (no
/// copy of a secret left to wipe).
package enum PropertyListBlob {
    /// - Throws: ``SecureDictionaryError/tooLarge(size:limit:)``,
    ///   ``SecureDictionaryError/invalidValue(reason:)``.
    package static func encode(_ entries: [String: PropertyListValue], maximumSize: Int) throws(SecureDictionaryError) -> Data {
        var bytes = try BinaryPropertyList.encode(entries, limits: PropertyListLimits(maximumSize: maximumSize))
        defer { Wipe.bytes(&bytes) }
        return Data(bytes)
    }

    /// - Throws: ``SecureDictionaryError/corrupt(reason:)``,
    ///   ``SecureDictionaryError/unsupportedFormatVersion(_:)``,
    ///   ``SecureDictionaryError/tooLarge(size:limit:)``.
    package static func decode(_ data: Data, maximumSize: Int) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        try BinaryPropertyList.decode(data, limits: PropertyListLimits(maximumSize: maximumSize))
    }

    /// How many keys the stored blob `secret` holds, validated as a load with the default size
    /// limit does, nothing decoded (for `secure-dict doctor --find`, which never shows keys).
    ///
    /// - Throws: ``SecureDictionaryError/corrupt(reason:)``,
    ///   ``SecureDictionaryError/unsupportedFormatVersion(_:)``,
    ///   ``SecureDictionaryError/tooLarge(size:limit:)``.
    package static func entryCount(of secret: SecretBytes) throws(SecureDictionaryError) -> Int {
        try secret.withUnsafeBytes { bytes throws(SecureDictionaryError) in
            try BinaryPropertyList.validate(bytes, limits: .default).root.count
        }
    }
}
