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
///
/// These functions make or take the caller's values; what the library keeps of a dictionary
/// is a ``Generation`` (the blob in a region of its own, read in place).
enum BinaryPropertyList {
    /// Validates a stored blob (size limit first), read where it is, and returns the caller's
    /// copy of its entries.
    static func decode(_ bytes: some ContiguousBytes, limits: PropertyListLimits) throws(SecureDictionaryError)
        -> [String: PropertyListValue]
    {
        let result: Result<[String: PropertyListValue], SecureDictionaryError> = bytes.withUnsafeBytes { bytes in
            Result { () throws(SecureDictionaryError) in
                try validate(bytes, limits: limits)
                let view = try BlobView(bytes)
                return try view.entries(of: view.topObject)
            }
        }
        return try result.get()
    }

    /// Validates a stored blob where it is, as hostile input: size limit first, then
    /// ``BinaryPropertyListReader``'s rules. Makes no value of it; returns its root, and what
    /// the writer writes for its whole tree.
    @discardableResult
    static func validate(_ bytes: UnsafeRawBufferPointer, limits: PropertyListLimits) throws(SecureDictionaryError)
        -> (root: BinaryPropertyListReader.Root, census: Census)
    {
        guard bytes.count <= limits.maximumSize else {
            throw .tooLarge(size: bytes.count, limit: limits.maximumSize)
        }
        let view = try BlobView(bytes)
        guard try view.byte(at: view.objectOffset(view.topObject)) & 0xF0 == 0xD0 else {
            throw .corrupt(reason: "root object is not a dictionary")
        }
        let (count, references) = try view.container(view.topObject)
        var reader = BinaryPropertyListReader(view, maximumDepth: limits.maximumDepth)
        let keysAscend = try reader.validate(view.topObject, depth: 1)
        return ((count, references, keysAscend), reader.census)
    }

    /// Encodes `entries` as a standard `bplist00` whose root is that dictionary: the same bytes
    /// for the same dictionary (``BinaryPropertyListWriter/sortedKeys(_:)``).
    ///
    /// - Throws: ``SecureDictionaryError/invalidValue(reason:)`` for what the reader would
    ///   reject (``Census/count(_:depth:maximumDepth:)``), ``SecureDictionaryError/tooLarge(size:limit:)``
    ///   when the result exceeds `limits.maximumSize`.
    static func encode(
        _ entries: [String: PropertyListValue],
        limits: PropertyListLimits
    ) throws(SecureDictionaryError) -> [UInt8] {
        var census = Census()
        try census.count(.dictionary(entries), depth: 1, maximumDepth: limits.maximumDepth)
        // Allocated once at its final size (why: `Census`), never copied.
        var bytes = [UInt8](unsafeUninitializedCapacity: BinaryPropertyListWriter.size(of: census)) { buffer, initialized in
            var writer = BinaryPropertyListWriter(into: buffer.baseAddress!, census: census)
            writer.write(.dictionary(entries), index: 0)
            initialized = writer.finish()
        }
        guard bytes.count <= limits.maximumSize else {
            let size = bytes.count
            Wipe.bytes(&bytes)
            throw .tooLarge(size: size, limit: limits.maximumSize)
        }
        return bytes
    }
}
