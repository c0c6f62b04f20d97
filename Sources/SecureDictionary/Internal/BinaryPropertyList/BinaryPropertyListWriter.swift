import FoundationEssentials

/// Writes a binary property list into memory sized beforehand from a ``Census``, in the one
/// canonical form the library stores.
///
/// The form: the top object is object 0. A container takes the next free object numbers for
/// its children (keys, then values), writes their references, then the children, so objects
/// are not in number order in the file (the offset table allows it). Keys are sorted by their
/// UTF-8 bytes; nothing is uniqued. Integers take the smallest of 1, 2 or 4 unsigned bytes,
/// else 8 signed (negative ones always 8, as Apple writes them); reals always 8 bytes, to read
/// back bit for bit; strings are ASCII (0x5n) when every scalar is below 0x80, else UTF-16
/// big-endian (0x6n). It writes the caller's values (``write(_:index:)``) and copies a stored
/// blob's objects (``copy(_:of:index:)``).
struct BinaryPropertyListWriter {
    /// The output, `capacity` bytes sized from the census; never written past.
    private let base: UnsafeMutableRawPointer
    private let capacity: Int
    private(set) var position = 0
    private var offsets: [Int]
    private var nextIndex = 1
    let referenceSize: Int

    /// A writer of the objects `census` counts into `output`, which must hold
    /// ``size(of:)`` bytes; writes the header.
    init(into output: UnsafeMutableRawPointer, census: Census) {
        base = output
        capacity = Self.size(of: census)
        referenceSize = Self.byteWidth(of: UInt64(max(census.objects, 1) - 1))
        offsets = [Int](repeating: 0, count: census.objects)
        for byte in "bplist00".utf8 { append(byte) }
    }

    /// The most bytes a blob of the objects `census` counts takes.
    static func size(of census: Census) -> Int {
        let referenceSize = byteWidth(of: UInt64(max(census.objects, 1) - 1))
        let objectsEnd = BlobView.headerSize + census.bytes + census.references * referenceSize
        return objectsEnd + census.objects * byteWidth(of: UInt64(objectsEnd)) + BlobView.trailerSize
    }

    /// Appends the offset table and the trailer; returns the blob's size.
    mutating func finish() -> Int {
        precondition(nextIndex == offsets.count, "the property list has other objects than its census")
        let tableOffset = position
        let offsetSize = Self.byteWidth(of: UInt64(offsets.max() ?? 0))
        for offset in offsets { appendBigEndian(UInt64(offset), width: offsetSize) }
        appendBigEndian(0, width: 4)
        appendBigEndian(0, width: 2)
        append(UInt8(offsetSize))
        append(UInt8(referenceSize))
        appendBigEndian(UInt64(offsets.count), width: 8)
        appendBigEndian(0, width: 8)
        appendBigEndian(UInt64(tableOffset), width: 8)
        return position
    }

    // MARK: Objects

    /// Starts the container numbered `index` (`marker` 0xA0 or 0xD0) with `count` elements or
    /// entries: its header and references. Returns the number of its first child; the caller
    /// writes the children in order (a dictionary's keys, then its values).
    mutating func startContainer(_ marker: UInt8, count: Int, index: Int) -> Int {
        offsets[index] = position
        appendHeader(marker, count: count)
        let first = nextIndex
        nextIndex += marker == 0xD0 ? 2 * count : count
        for child in first..<nextIndex { appendBigEndian(UInt64(child), width: referenceSize) }
        return first
    }

    mutating func write(_ value: PropertyListValue, index: Int) {
        offsets[index] = position
        switch value {
        case .dictionary(let entries):
            let firstKey = startContainer(0xD0, count: entries.count, index: index)
            let keys = Self.sortedKeys(entries.keys)
            for (entry, key) in keys.enumerated() { write(.string(entries.keys[key]), index: firstKey + entry) }
            for (entry, key) in keys.enumerated() { write(entries.values[key], index: firstKey + keys.count + entry) }
        case .array(let elements):
            let first = startContainer(0xA0, count: elements.count, index: index)
            for (element, value) in elements.enumerated() { write(value, index: first + element) }
        case .string(let string):
            var contiguous = string
            contiguous.withUTF8 { utf8 in
                if BlobView.isASCII(UnsafeRawBufferPointer(utf8)) {
                    appendHeader(0x50, count: utf8.count)
                    append(contentsOf: UnsafeRawBufferPointer(utf8))
                } else {
                    appendHeader(0x60, count: string.utf16.count)
                    for unit in string.utf16 { appendBigEndian(UInt64(unit), width: 2) }
                }
            }
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

    // MARK: Bytes

    mutating func markObject(_ index: Int) { offsets[index] = position }

    /// A marker whose low nibble holds `count`, or 0xF followed by an integer object.
    mutating func appendHeader(_ marker: UInt8, count: Int) {
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

    /// Room for `count` more bytes: a wrong census stops the process rather than write past the buffer.
    @inline(__always)
    private mutating func claim(_ count: Int) -> UnsafeMutableRawPointer {
        precondition(count <= capacity - position, "the property list outgrew its census")
        defer { position += count }
        return base + position
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        claim(1).storeBytes(of: byte, as: UInt8.self)
    }

    mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        claim(bytes.count).copyMemory(from: source, byteCount: bytes.count)
    }

    /// The low `width` bytes of `value` (1, 2, 4 or 8), most significant first.
    @inline(__always)
    mutating func appendBigEndian(_ value: UInt64, width: Int) {
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
