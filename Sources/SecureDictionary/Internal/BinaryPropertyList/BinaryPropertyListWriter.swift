#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Writes a binary property list in two passes.
///
/// 1. ``Census`` walks the tree once: it checks the depth limit (before descending, so it
///    never recurses deeper than the limit), counts the objects (which fixes the object
///    reference size) and bounds the output size, so the output buffer is allocated once and
///    never reallocated (a reallocation would leave a copy of secrets behind, unwiped).
/// 2. The writer assigns object numbers as it goes: a container takes the next free numbers
///    for its children (keys first, then values), writes their references, then writes the
///    children themselves. Objects are therefore not in number order in the file, which the
///    format allows: the offset table maps each number to its offset.
///
/// Nothing is uniqued: each key and value is its own object. Integers use the smallest of
/// 1, 2 or 4 unsigned bytes, else 8 signed bytes (negative ones always 8, as Apple writes
/// them); reals are always 8 bytes so they read back bit for bit; strings are ASCII (0x5n)
/// when every byte is below 0x80, else UTF-16 big-endian (0x6n).
///
/// The output is written straight into the array returned, allocated once from the census
/// bound. Scratch buffers holding key bytes are wiped (`explicit_bzero`) before they are
/// freed, and so is a finished blob that turns out too large.
struct BinaryPropertyListWriter {
    /// What the first pass learns about the tree.
    struct Census {
        let maximumDepth: Int
        /// Objects in the tree, keys included.
        var objectCount = 0
        /// Object references written by containers.
        var referenceCount = 0
        /// An upper bound of the output bytes other than references, offset table and trailer.
        var byteBound = 0

        init(maximumDepth: Int) {
            self.maximumDepth = maximumDepth
        }

        mutating func countDictionary(
            _ entries: [String: PropertyListValue], depth: Int
        ) throws(BinaryPropertyListError) {
            guard depth <= maximumDepth else {
                throw .invalidValue(reason: "containers nest deeper than the depth limit")
            }
            objectCount += 1 + entries.count
            referenceCount += 2 * entries.count
            byteBound += 10
            var hasDollarKey = false
            for (key, value) in entries {
                hasDollarKey = hasDollarKey || key.utf8.first == UInt8(ascii: "$")
                byteBound += Self.stringBound(key)
                try count(value, depth: depth + 1)
            }
            if hasDollarKey, entries["$archiver"] != nil, entries["$objects"] != nil {
                throw .invalidValue(
                    reason: "a dictionary with both \"$archiver\" and \"$objects\" keys reads as a keyed archive")
            }
        }

        /// UTF-16 takes at most 2 bytes per UTF-8 byte; the header at most 10 bytes.
        private static func stringBound(_ string: String) -> Int {
            2 * string.utf8.count + 10
        }

        mutating func count(_ value: PropertyListValue, depth: Int) throws(BinaryPropertyListError) {
            switch value {
            case .dictionary(let entries):
                try countDictionary(entries, depth: depth)
            case .array(let elements):
                guard depth <= maximumDepth else {
                    throw .invalidValue(reason: "containers nest deeper than the depth limit")
                }
                objectCount += 1
                referenceCount += elements.count
                byteBound += 10
                for element in elements {
                    try count(element, depth: depth + 1)
                }
            case .string(let string):
                objectCount += 1
                byteBound += Self.stringBound(string)
            case .data(let data):
                objectCount += 1
                byteBound += data.count + 10
            case .integer, .real, .date:
                objectCount += 1
                byteBound += 9
            case .unsignedInteger(let value):
                guard value > UInt64(Int.max) else {
                    throw .invalidValue(reason: "an unsigned integer up to Int.max must be stored as .integer")
                }
                objectCount += 1
                byteBound += 17
            case .bool:
                objectCount += 1
                byteBound += 1
            }
        }
    }

    /// The output, allocated once from the census; never written past `capacity`.
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private var position = 0
    private var offsets: [Int]
    private var nextIndex = 1
    private let referenceSize: Int

    /// Writes `entries` (counted by `census`) as a whole `bplist00`, straight into the array
    /// it returns: the buffer is sized from the census, so it is never reallocated (which
    /// would leave a copy of the secrets behind, unwiped) and never copied.
    static func blob(of entries: [String: PropertyListValue], census: Census) -> [UInt8] {
        let referenceSize = byteWidth(of: UInt64(census.objectCount - 1))
        let objectsBound = 8 + census.byteBound + census.referenceCount * referenceSize
        let capacity = objectsBound + census.objectCount * byteWidth(of: UInt64(objectsBound)) + 32
        return [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
            var writer = BinaryPropertyListWriter(
                base: buffer.baseAddress!, capacity: buffer.count, objectCount: census.objectCount,
                referenceSize: referenceSize)
            for byte in "bplist00".utf8 { writer.append(byte) }
            writer.writeDictionary(entries, index: 0)
            writer.finish()
            initialized = writer.position
        }
    }

    private init(base: UnsafeMutablePointer<UInt8>, capacity: Int, objectCount: Int, referenceSize: Int) {
        self.base = base
        self.capacity = capacity
        self.referenceSize = referenceSize
        offsets = [Int](repeating: 0, count: objectCount)
    }

    /// Appends the offset table and the trailer.
    private mutating func finish() {
        let tableOffset = position
        let offsetSize = Self.byteWidth(of: UInt64(offsets.max() ?? 0))
        for offset in offsets {
            appendBigEndian(UInt64(offset), width: offsetSize)
        }
        appendBigEndian(0, width: 4)
        appendBigEndian(0, width: 2)
        append(UInt8(offsetSize))
        append(UInt8(referenceSize))
        appendBigEndian(UInt64(offsets.count), width: 8)
        appendBigEndian(0, width: 8)
        appendBigEndian(UInt64(tableOffset), width: 8)
    }

    // MARK: Objects

    private mutating func writeDictionary(_ entries: [String: PropertyListValue], index: Int) {
        offsets[index] = position
        let count = entries.count
        appendHeader(0xD0, count: count)
        let firstKey = reserveIndices(count)
        let firstValue = reserveIndices(count)
        for entry in 0..<count { appendReference(firstKey + entry) }
        for entry in 0..<count { appendReference(firstValue + entry) }
        var keys = SortedKeys(entries)
        defer { Wipe.bytes(&keys.utf8) }
        keys.utf8.withUnsafeBufferPointer { utf8 in
            for (entry, key) in keys.order.enumerated() {
                offsets[firstKey + entry] = position
                let keyUTF8 = UnsafeBufferPointer(rebasing: utf8[key.start..<(key.start + key.count)])
                appendString(utf8: keyUTF8) { entries.keys[key.position] }
            }
        }
        for (entry, key) in keys.order.enumerated() {
            write(entries.values[key.position], index: firstValue + entry)
        }
    }

    private mutating func write(_ value: PropertyListValue, index: Int) {
        offsets[index] = position
        switch value {
        case .dictionary(let entries):
            writeDictionary(entries, index: index)
        case .array(let elements):
            appendHeader(0xA0, count: elements.count)
            let first = reserveIndices(elements.count)
            for element in 0..<elements.count { appendReference(first + element) }
            for (element, value) in elements.enumerated() { write(value, index: first + element) }
        case .string(let string):
            var contiguous = string
            contiguous.withUTF8 { utf8 in appendString(utf8: utf8) { string } }
        case .integer(let integer):
            appendInteger(integer)
        case .unsignedInteger(let integer):
            // Above Int64.max: the 16-byte form, high half zero (as Apple and Python write it).
            append(0x14)
            appendBigEndian(0, width: 8)
            appendBigEndian(integer, width: 8)
        case .real(let real):
            append(0x23)
            appendBigEndian(real.bitPattern, width: 8)
        case .date(let date):
            append(0x33)
            appendBigEndian(date.timeIntervalSinceReferenceDate.bitPattern, width: 8)
        case .bool(let bool):
            append(bool ? 0x09 : 0x08)
        case .data(let data):
            appendHeader(0x40, count: data.count)
            data.withUnsafeBytes { append(contentsOf: $0) }
        }
    }

    /// A string object: ASCII when every byte of `utf8` (the string's UTF-8) is below 0x80,
    /// else UTF-16 big-endian (of `string()`, asked for only then).
    private mutating func appendString(utf8: UnsafeBufferPointer<UInt8>, string: () -> String) {
        if BinaryPropertyListReader.isASCII(UnsafeRawBufferPointer(utf8)) {
            appendHeader(0x50, count: utf8.count)
            append(contentsOf: UnsafeRawBufferPointer(utf8))
        } else {
            let utf16 = string().utf16
            appendHeader(0x60, count: utf16.count)
            for unit in utf16 { appendBigEndian(UInt64(unit), width: 2) }
        }
    }

    // MARK: Bytes

    private mutating func reserveIndices(_ count: Int) -> Int {
        defer { nextIndex += count }
        return nextIndex
    }

    /// A marker whose low nibble holds `count`, or 0xF followed by an integer object.
    private mutating func appendHeader(_ marker: UInt8, count: Int) {
        if count < 15 {
            append(marker | UInt8(count))
        } else {
            append(marker | 0x0F)
            appendInteger(count)
        }
    }

    private mutating func appendInteger(_ integer: Int) {
        if integer < 0 {
            append(0x13)
            appendBigEndian(UInt64(bitPattern: Int64(integer)), width: 8)
        } else {
            let width = Self.byteWidth(of: UInt64(integer))
            append(0x10 | UInt8(width.trailingZeroBitCount))
            appendBigEndian(UInt64(integer), width: width)
        }
    }

    private mutating func appendReference(_ index: Int) {
        appendBigEndian(UInt64(index), width: referenceSize)
    }

    /// Room for `count` more bytes. The census bounds the output, so this never fails unless
    /// the census is wrong: then it stops the process rather than write past the buffer.
    @inline(__always)
    private mutating func claim(_ count: Int) -> UnsafeMutableRawPointer {
        precondition(count <= capacity - position, "the property list outgrew its census bound")
        defer { position += count }
        return UnsafeMutableRawPointer(base + position)
    }

    @inline(__always)
    private mutating func append(_ byte: UInt8) {
        claim(1).storeBytes(of: byte, as: UInt8.self)
    }

    private mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        claim(bytes.count).copyMemory(from: source, byteCount: bytes.count)
    }

    /// The low `width` bytes of `value` (1, 2, 4 or 8), most significant first.
    @inline(__always)
    private mutating func appendBigEndian(_ value: UInt64, width: Int) {
        switch width {
        case 1: claim(1).storeBytes(of: UInt8(truncatingIfNeeded: value), as: UInt8.self)
        case 2: claim(2).storeBytes(of: UInt16(truncatingIfNeeded: value).bigEndian, as: UInt16.self)
        case 4: claim(4).storeBytes(of: UInt32(truncatingIfNeeded: value).bigEndian, as: UInt32.self)
        default: claim(8).storeBytes(of: value.bigEndian, as: UInt64.self)
        }
    }

    /// The smallest of 1, 2, 4 or 8 bytes that holds `value`.
    static func byteWidth(of value: UInt64) -> Int {
        switch value {
        case 0...0xFF: 1
        case 0x100...0xFFFF: 2
        case 0x1_0000...0xFFFF_FFFF: 4
        default: 8
        }
    }
}

extension BinaryPropertyListWriter {
    /// The bytes of one object that refers to no other (a scalar, an empty array or
    /// dictionary), exactly as ``blob(of:census:)`` writes it as a value of the root
    /// dictionary; `nil` for a container with elements. For ``BinaryPropertyListSplice``.
    ///
    /// - Throws: what the census throws for such a value at depth 2 (an unsigned integer
    ///   that must be stored as `.integer`, a container deeper than `maximumDepth`).
    static func objectBytes(of value: PropertyListValue, maximumDepth: Int) throws(BinaryPropertyListError) -> [UInt8]? {
        switch value {
        case .array(let elements) where !elements.isEmpty: return nil
        case .dictionary(let entries) where !entries.isEmpty: return nil
        default: break
        }
        var census = Census(maximumDepth: maximumDepth)
        try census.count(value, depth: 2)
        return [UInt8](unsafeUninitializedCapacity: census.byteBound) { buffer, initialized in
            var writer = BinaryPropertyListWriter(
                base: buffer.baseAddress!, capacity: buffer.count, objectCount: 1, referenceSize: 1)
            writer.write(value, index: 0)
            initialized = writer.position
        }
    }
}
