import FoundationEssentials

/// Our own codec for the stored secret: a binary property list (`bplist00`) whose root is a
/// dictionary with `String` keys.
///
/// ```swift
/// let blob = try BinaryPropertyList.encode(["apiToken": "s3cr3t"], limits: .default)
/// let entries = try BinaryPropertyList.decode(blob, limits: .default)
/// ```
///
/// Never Foundation's `PropertyListSerialization`: any process of the user can rewrite a stored
/// blob, and on Linux Foundation crashes on a plist holding a set and spends seconds on a tiny
/// one whose objects share each other (design invariant 6). The reader treats its input as
/// hostile (``BinaryPropertyListReader``); the writer emits a standard `bplist00` that
/// Foundation, `plistlib` and `plutil` read back to the same values. These functions make or
/// take the caller's values; what the library keeps is a ``Generation``.
enum BinaryPropertyList {
    /// Validates a stored blob (size limit first), read where it is, and returns the caller's
    /// copy of its entries.
    static func decode(_ bytes: some ContiguousBytes, limits: PropertyListLimits) throws(SecureDictionaryError)
        -> [String: PropertyListValue]
    {
        // `withUnsafeBytes` rethrows untyped: the Result keeps the error typed.
        try bytes.withUnsafeBytes { bytes in
            Result { () throws(SecureDictionaryError) in
                try validate(bytes, limits: limits)
                let view = try BlobView(bytes)
                return try view.entries(of: view.topObject)
            }
        }.get()
    }

    /// Validates a stored blob where it is, as hostile input: size limit first, then
    /// ``BinaryPropertyListReader``'s rules. Returns its root, and the census of its whole tree.
    @discardableResult
    static func validate(_ bytes: UnsafeRawBufferPointer, limits: PropertyListLimits) throws(SecureDictionaryError)
        -> (root: BlobView.Container, census: Census)
    {
        guard bytes.count <= limits.maximumSize else {
            throw .tooLarge(size: bytes.count, limit: limits.maximumSize)
        }
        let view = try BlobView(bytes)
        guard try view.byte(at: view.objectOffset(view.topObject)) & 0xF0 == 0xD0 else {
            throw .corrupt(reason: "root object is not a dictionary")
        }
        var reader = BinaryPropertyListReader(view, maximumDepth: limits.maximumDepth)
        return (try reader.validate(view.topObject, depth: 1)!, reader.census)
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
        // Allocated once at its final size (why: `Census`).
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
