import Foundation

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
/// Scratch buffers holding key bytes are wiped (`explicit_bzero`) before they are freed, and
/// so is a finished blob that turns out too large.
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

    private var bytes: [UInt8] = []
    /// The capacity reserved up front; `bytes` must never outgrow it.
    private let reservedCapacity: Int
    private var offsets: [Int]
    private var nextIndex = 1
    private let referenceSize: Int

    /// Sizes the buffers from the census; the root dictionary is object 0.
    init(census: Census) {
        referenceSize = Self.byteWidth(of: UInt64(census.objectCount - 1))
        offsets = [Int](repeating: 0, count: census.objectCount)
        let objectsBound = 8 + census.byteBound + census.referenceCount * referenceSize
        bytes.reserveCapacity(objectsBound + census.objectCount * Self.byteWidth(of: UInt64(objectsBound)) + 32)
        reservedCapacity = bytes.capacity
        bytes.append(contentsOf: "bplist00".utf8)
    }

    /// Appends the offset table and the trailer, and returns the blob.
    mutating func finish() -> [UInt8] {
        let tableOffset = bytes.count
        let offsetSize = Self.byteWidth(of: UInt64(offsets.max() ?? 0))
        for offset in offsets {
            appendBigEndian(UInt64(offset), width: offsetSize)
        }
        bytes.append(contentsOf: repeatElement(0, count: 6))
        bytes.append(UInt8(offsetSize))
        bytes.append(UInt8(referenceSize))
        appendBigEndian(UInt64(offsets.count), width: 8)
        appendBigEndian(0, width: 8)
        appendBigEndian(UInt64(tableOffset), width: 8)
        assert(bytes.capacity == reservedCapacity, "the output buffer was reallocated")
        return bytes
    }

    // MARK: Objects

    mutating func writeDictionary(_ entries: [String: PropertyListValue], index: Int) {
        offsets[index] = bytes.count
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
                offsets[firstKey + entry] = bytes.count
                let keyUTF8 = UnsafeBufferPointer(rebasing: utf8[key.start..<(key.start + key.count)])
                appendString(utf8: keyUTF8, string: entries[key.position].key)
            }
        }
        for (entry, key) in keys.order.enumerated() {
            write(entries[key.position].value, index: firstValue + entry)
        }
    }

    private mutating func write(_ value: PropertyListValue, index: Int) {
        switch value {
        case .dictionary(let entries):
            writeDictionary(entries, index: index)
        case .array(let elements):
            offsets[index] = bytes.count
            appendHeader(0xA0, count: elements.count)
            let first = reserveIndices(elements.count)
            for element in 0..<elements.count { appendReference(first + element) }
            for (element, value) in elements.enumerated() { write(value, index: first + element) }
        case .string(let string):
            offsets[index] = bytes.count
            var contiguous = string
            contiguous.withUTF8 { appendString(utf8: $0, string: string) }
        case .integer(let integer):
            offsets[index] = bytes.count
            appendInteger(integer)
        case .unsignedInteger(let integer):
            // Above Int64.max: the 16-byte form, high half zero (as Apple and Python write it).
            offsets[index] = bytes.count
            bytes.append(0x14)
            appendBigEndian(0, width: 8)
            appendBigEndian(integer, width: 8)
        case .real(let real):
            offsets[index] = bytes.count
            bytes.append(0x23)
            appendBigEndian(real.bitPattern, width: 8)
        case .date(let date):
            offsets[index] = bytes.count
            bytes.append(0x33)
            appendBigEndian(date.timeIntervalSinceReferenceDate.bitPattern, width: 8)
        case .bool(let bool):
            offsets[index] = bytes.count
            bytes.append(bool ? 0x09 : 0x08)
        case .data(let data):
            offsets[index] = bytes.count
            appendHeader(0x40, count: data.count)
            data.withUnsafeBytes { bytes.append(contentsOf: $0) }
        }
    }

    /// A string object: ASCII when every byte of `utf8` (the string's UTF-8) is below 0x80,
    /// else UTF-16 big-endian.
    private mutating func appendString(utf8: UnsafeBufferPointer<UInt8>, string: String) {
        if BinaryPropertyListReader.isASCII(UnsafeRawBufferPointer(utf8)) {
            appendHeader(0x50, count: utf8.count)
            bytes.append(contentsOf: utf8)
        } else {
            appendHeader(0x60, count: string.utf16.count)
            for unit in string.utf16 {
                bytes.append(UInt8(truncatingIfNeeded: unit >> 8))
                bytes.append(UInt8(truncatingIfNeeded: unit))
            }
        }
    }

    /// A dictionary's keys in the order they are written: by their UTF-8 bytes, which is
    /// Unicode scalar order (as Python's `plistlib` sorts), and the same as `String`'s `<` for
    /// keys in NFC. Unlike `<`, it is a strict order on any two distinct keys, so the output
    /// never depends on the dictionary's iteration order.
    ///
    /// The keys' bytes are copied once into `utf8`. Sorting then compares 8 bytes taken just
    /// past the prefix all keys share (settings keys often share a long one, such as
    /// `com.example.`) and, on a tie, the rest with `memcmp`: no `String` comparison and no
    /// reference counting.
    struct SortedKeys {
        struct Key {
            /// 8 bytes from `sharedPrefix` on, big-endian, zero-padded.
            var rank: UInt64 = 0
            var start: Int
            var count: Int
            var position: Dictionary<String, PropertyListValue>.Index
        }

        var utf8: [UInt8] = []
        var order: [Key] = []

        init(_ entries: [String: PropertyListValue]) {
            order.reserveCapacity(entries.count)
            for position in entries.indices {
                var key = entries[position].key
                let start = utf8.count
                key.withUTF8 { utf8.append(contentsOf: $0) }
                order.append(Key(start: start, count: utf8.count - start, position: position))
            }
            guard order.count > 1 else { return }
            utf8.withUnsafeBufferPointer { utf8 in
                guard let base = utf8.baseAddress else { return }
                // The length of the prefix every key shares with the first one.
                var shared = order[0].count
                for key in order.dropFirst() {
                    shared = Swift.min(shared, key.count)
                    var index = 0
                    while index < shared, base[order[0].start + index] == base[key.start + index] { index += 1 }
                    shared = index
                }
                for position in order.indices {
                    let key = order[position]
                    var rank: UInt64 = 0
                    for index in shared..<(shared + 8) {
                        rank = rank << 8 | (index < key.count ? UInt64(base[key.start + index]) : 0)
                    }
                    order[position].rank = rank
                }
                let ranked = shared + 8
                order.sort { left, right in
                    if left.rank != right.rank { return left.rank < right.rank }
                    let common = Swift.min(left.count, right.count)
                    if common > ranked {
                        let difference = memcmp(base + left.start + ranked, base + right.start + ranked, common - ranked)
                        if difference != 0 { return difference < 0 }
                    }
                    return left.count < right.count
                }
            }
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
            bytes.append(marker | UInt8(count))
        } else {
            bytes.append(marker | 0x0F)
            appendInteger(count)
        }
    }

    private mutating func appendInteger(_ integer: Int) {
        if integer < 0 {
            bytes.append(0x13)
            appendBigEndian(UInt64(bitPattern: Int64(integer)), width: 8)
        } else {
            let width = Self.byteWidth(of: UInt64(integer))
            bytes.append(0x10 | UInt8(width.trailingZeroBitCount))
            appendBigEndian(UInt64(integer), width: width)
        }
    }

    private mutating func appendReference(_ index: Int) {
        appendBigEndian(UInt64(index), width: referenceSize)
    }

    @inline(__always)
    private mutating func appendBigEndian(_ value: UInt64, width: Int) {
        var shift = (width - 1) * 8
        while shift >= 0 {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            shift -= 8
        }
    }

    /// The smallest of 1, 2, 4 or 8 bytes that holds `value`.
    private static func byteWidth(of value: UInt64) -> Int {
        switch value {
        case 0...0xFF: 1
        case 0x100...0xFFFF: 2
        case 0x1_0000...0xFFFF_FFFF: 4
        default: 8
        }
    }
}
