/// What the writer writes for some objects, counted first: objects (keys included), references
/// in containers, and the bytes of everything else. The output's size follows exactly, so its
/// buffer is allocated once and never grows (a buffer that grew would leave a copy of secrets
/// behind).
///
/// ```swift
/// var census = Census()
/// try census.count(.array(["a", 1]), depth: 2, maximumDepth: 64)   // 3 objects, 2 references
/// ```
///
/// Exact for the writer's form: ``Census/count(_:depth:maximumDepth:)`` counts the caller's
/// values, ``BinaryPropertyListReader`` a stored blob's objects.
struct Census: Equatable, Sendable {
    var objects = 0
    var references = 0
    /// Bytes of the objects themselves: markers, counts, payloads (references apart).
    var bytes = 0

    static func + (left: Census, right: Census) -> Census {
        Census(
            objects: left.objects + right.objects, references: left.references + right.references, bytes: left.bytes + right.bytes
        )
    }

    static func - (left: Census, right: Census) -> Census {
        left + Census(objects: -right.objects, references: -right.references, bytes: -right.bytes)
    }

    /// A container's own object, holding `references` references (pairs for a dictionary).
    static func container(count: Int, references: Int) -> Census {
        Census(objects: 1, references: references, bytes: headerLength(count))
    }

    /// A marker holding `count` in its low nibble, or 0xF and an integer object after it.
    static func headerLength(_ count: Int) -> Int {
        count < 15 ? 1 : 2 + BinaryPropertyListWriter.byteWidth(of: UInt64(count))
    }

    /// The bytes the writer writes for an object that is no container.
    static func scalarLength(_ value: PropertyListValue) -> Int {
        switch value {
        case .integer(let integer): integer < 0 ? 9 : 1 + BinaryPropertyListWriter.byteWidth(of: UInt64(integer))
        case .unsignedInteger: 17
        case .real, .date: 9
        case .bool: 1
        case .data(let data): headerLength(data.count) + data.count
        case .string(let string):
            if string.utf8.withContiguousStorageIfAvailable({ BlobView.isASCII(UnsafeRawBufferPointer($0)) })
                ?? string.utf8.allSatisfy({ $0 < 0x80 })
            {
                headerLength(string.utf8.count) + string.utf8.count
            } else {
                headerLength(string.utf16.count) + 2 * string.utf16.count
            }
        case .array, .dictionary: preconditionFailure("not a scalar")
        }
    }

    /// Counts the caller's `value` at nesting level `depth`.
    ///
    /// - Throws: ``SecureDictionaryError/invalidValue(reason:)`` for what the reader would
    ///   reject: nesting deeper than `maximumDepth`, a dictionary that reads as a keyed
    ///   archive, a ``PropertyListValue/unsignedInteger(_:)`` that must be an integer.
    mutating func count(_ value: PropertyListValue, depth: Int, maximumDepth: Int) throws(SecureDictionaryError) {
        switch value {
        case .dictionary(let entries):
            guard depth <= maximumDepth else { throw .invalidValue(reason: "containers nest deeper than the depth limit") }
            self = self + .container(count: entries.count, references: 2 * entries.count)
            var hasDollarKey = false
            for (key, value) in entries {
                hasDollarKey = hasDollarKey || key.utf8.first == UInt8(ascii: "$")
                try count(.string(key), depth: depth + 1, maximumDepth: maximumDepth)
                try count(value, depth: depth + 1, maximumDepth: maximumDepth)
            }
            if hasDollarKey, entries["$archiver"] != nil, entries["$objects"] != nil { throw Self.keyedArchive }
        case .array(let elements):
            guard depth <= maximumDepth else { throw .invalidValue(reason: "containers nest deeper than the depth limit") }
            self = self + .container(count: elements.count, references: elements.count)
            for element in elements { try count(element, depth: depth + 1, maximumDepth: maximumDepth) }
        case .unsignedInteger(let integer) where integer <= UInt64(Int.max):
            throw .invalidValue(reason: "an unsigned integer up to Int.max must be stored as .integer")
        case .string, .data, .integer, .unsignedInteger, .real, .date, .bool:
            objects += 1
            bytes += Self.scalarLength(value)
        }
    }

    static let keyedArchive = SecureDictionaryError.invalidValue(
        reason: "a dictionary with both \"$archiver\" and \"$objects\" keys reads as a keyed archive")
}
