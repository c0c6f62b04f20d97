#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Our own codec for the stored secret: a binary property list (`bplist00`) whose root is a
/// dictionary with `String` keys.
///
/// ```swift
/// let blob = try BinaryPropertyList.encode(["apiToken": "s3cr3t"], limits: .default)
/// let entries = try BinaryPropertyList.decode(blob, limits: .default)
/// ```
///
/// Foundation's `PropertyListSerialization` must never see a stored blob: any process of the
/// same user can rewrite it, and on Linux Foundation crashes on a plist holding a set and
/// spends seconds on a tiny plist whose objects share each other. This reader treats its
/// input as hostile (see ``BinaryPropertyListReader``); the writer emits a standard
/// `bplist00` that Foundation, `plistlib` and `plutil` read back to the same values.
enum BinaryPropertyList {
    /// Decodes a stored blob. Checks the size limit before anything else.
    static func decode(
        _ bytes: UnsafeRawBufferPointer,
        limits: PropertyListLimits
    ) throws(BinaryPropertyListError) -> [String: PropertyListValue] {
        guard bytes.count <= limits.maximumSize else {
            throw .tooLarge(size: bytes.count, limit: limits.maximumSize)
        }
        var reader = try BinaryPropertyListReader(bytes, maximumDepth: limits.maximumDepth)
        return try reader.decodeRoot()
    }

    /// Decodes a stored blob held in an array.
    static func decode(
        _ bytes: [UInt8],
        limits: PropertyListLimits
    ) throws(BinaryPropertyListError) -> [String: PropertyListValue] {
        let result: Result<[String: PropertyListValue], BinaryPropertyListError> =
            bytes.withUnsafeBytes { buffer in
                Result { () throws(BinaryPropertyListError) in try decode(buffer, limits: limits) }
            }
        return try result.get()
    }

    /// Encodes `entries` as a standard `bplist00` whose root is that dictionary.
    ///
    /// The same dictionary always gives the same bytes: keys are written sorted by their UTF-8
    /// bytes (the order of `String`'s `<` for keys in NFC; see ``BinaryPropertyListWriter/SortedKeys``).
    /// Throws ``BinaryPropertyListError/invalidValue(reason:)`` for what the reader would
    /// reject (nesting deeper than `limits.maximumDepth`, a dictionary that reads as a keyed
    /// archive) and ``BinaryPropertyListError/tooLarge(size:limit:)`` when the result exceeds
    /// `limits.maximumSize`.
    static func encode(
        _ entries: [String: PropertyListValue],
        limits: PropertyListLimits
    ) throws(BinaryPropertyListError) -> [UInt8] {
        var census = BinaryPropertyListWriter.Census(maximumDepth: limits.maximumDepth)
        try census.countDictionary(entries, depth: 1)
        var bytes = BinaryPropertyListWriter.blob(of: entries, census: census)
        guard bytes.count <= limits.maximumSize else {
            let size = bytes.count
            Wipe.bytes(&bytes)
            throw .tooLarge(size: size, limit: limits.maximumSize)
        }
        return bytes
    }

    /// ``decode(_:limits:)-([UInt8],_)`` with the library's error type.
    static func entries(of bytes: [UInt8], limits: PropertyListLimits) throws(SecureDictionaryError) -> [String:
        PropertyListValue]
    {
        do throws(BinaryPropertyListError) {
            return try decode(bytes, limits: limits)
        } catch {
            throw SecureDictionaryError(error)
        }
    }

    /// ``decode(_:limits:)-(UnsafeRawBufferPointer,_)`` with the library's error type.
    static func entries(
        of bytes: UnsafeRawBufferPointer, limits: PropertyListLimits
    ) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        do throws(BinaryPropertyListError) {
            return try decode(bytes, limits: limits)
        } catch {
            throw SecureDictionaryError(error)
        }
    }

    /// ``encode(_:limits:)`` with the library's error type.
    static func blob(of entries: [String: PropertyListValue], limits: PropertyListLimits) throws(SecureDictionaryError) -> [UInt8]
    {
        do throws(BinaryPropertyListError) {
            return try encode(entries, limits: limits)
        } catch {
            throw SecureDictionaryError(error)
        }
    }
}
