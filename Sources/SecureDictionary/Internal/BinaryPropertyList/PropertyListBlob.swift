#if canImport(FoundationEssentials)
    package import FoundationEssentials
#else
    package import Foundation
#endif

/// The binary property list SecureDictionary stores, for the command-line tool's `export` and
/// `import` and for the tests (whose support product hands it to the reliability suite and the
/// benchmark as `BinaryPropertyListCoding`).
///
/// ```swift
/// let blob = try PropertyListBlob.encode(settings.snapshot)     // bplist00…
/// let entries = try PropertyListBlob.decode(blob)               // hostile-input safe
/// ```
///
/// Encoding is deterministic (keys sorted), and decoding applies the same limits as loading
/// from the keyring: size cap first, bounded depth, no reference expansion, no sets, UIDs or
/// keyed archives. Foundation's parser never sees the bytes.
package enum PropertyListBlob {
    /// - Throws: ``SecureDictionaryError/tooLarge(size:limit:)``,
    ///   ``SecureDictionaryError/invalidValue(reason:)``.
    package static func encode(
        _ entries: [String: PropertyListValue],
        maximumSize: Int = SecureDictionary.Options.defaultMaximumSize
    ) throws(SecureDictionaryError) -> Data {
        do throws(BinaryPropertyListError) {
            var bytes = try BinaryPropertyList.encode(entries, limits: PropertyListLimits(maximumSize: maximumSize))
            defer { Wipe.bytes(&bytes) }
            return Data(bytes)
        } catch {
            throw SecureDictionaryError(error)
        }
    }

    /// - Throws: ``SecureDictionaryError/corrupt(reason:)``,
    ///   ``SecureDictionaryError/unsupportedFormatVersion(_:)``,
    ///   ``SecureDictionaryError/tooLarge(size:limit:)``.
    package static func decode(
        _ data: Data,
        maximumSize: Int = SecureDictionary.Options.defaultMaximumSize
    ) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        // Read in place (the size limit is checked first, as ever): no copy of the secret
        // bytes is made, so none is left to wipe.
        let result: Result<[String: PropertyListValue], BinaryPropertyListError> = data.withUnsafeBytes { bytes in
            Result { () throws(BinaryPropertyListError) in
                try BinaryPropertyList.decode(bytes, limits: PropertyListLimits(maximumSize: maximumSize))
            }
        }
        return try result.mapError { SecureDictionaryError($0) }.get()
    }

    /// How many keys the stored blob `secret` holds, validated in place as hostile input (the
    /// same rules as a load) and nothing decoded: no key or value is copied, so none is left to
    /// wipe. For `secure-dict doctor --find`, which counts a copy's keys and never shows them.
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
        let result: Result<Int, BinaryPropertyListError> = secret.withUnsafeBytes { bytes in
            Result { () throws(BinaryPropertyListError) in
                try BinaryPropertyList.validate(bytes, limits: PropertyListLimits(maximumSize: maximumSize)).root.count
            }
        }
        return try result.mapError { SecureDictionaryError($0) }.get()
    }
}
