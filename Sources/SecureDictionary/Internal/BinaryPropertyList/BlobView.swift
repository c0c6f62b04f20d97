/// A binary property list in memory, its header and trailer checked: the bounds-checked
/// reads every other part of the codec is built on.
///
/// ```swift
/// let view = try BlobView(bytes)                   // "bplist00", trailer in range
/// let offset = try view.objectOffset(view.topObject)
/// ```
///
/// The trailer is validated (overflow-checked) before any object is read, and every later
/// read is checked against the bounds it implies: no input can make a read leave the blob.
/// Objects lie in `[8, objectsEnd)`, as every writer lays them out. The bytes must outlive the
/// view (a ``Generation`` keeps its region).
struct BlobView {
    let base: UnsafeRawPointer
    /// Offset of the offset table, which is also where the object area ends.
    let objectsEnd: Int
    let offsetIntSize: Int
    let objectRefSize: Int
    let objectCount: Int
    let topObject: Int

    static let headerSize = 8
    static let trailerSize = 32

    /// Checks the magic, the version and the trailer of `bytes`.
    init(_ bytes: UnsafeRawBufferPointer) throws(SecureDictionaryError) {
        let size = bytes.count
        guard size >= Self.headerSize, let base = bytes.baseAddress else {
            throw .corrupt(reason: "shorter than a binary property list header")
        }
        guard bytes.prefix(6).elementsEqual("bplist".utf8) else {
            throw .corrupt(reason: "not a binary property list")
        }
        guard bytes[6] == UInt8(ascii: "0"), bytes[7] == UInt8(ascii: "0") else {
            // Only the two version characters, made printable: an error never quotes the input.
            let printable = [bytes[6], bytes[7]].map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }
            throw .unsupportedFormatVersion(String(decoding: printable, as: UTF8.self))
        }
        guard size >= Self.headerSize + Self.trailerSize + 1 else {
            throw .corrupt(reason: "too short for a trailer and an object")
        }
        let trailer = size - Self.trailerSize
        let offsetIntSize = Int(bytes[trailer + 6])
        let objectRefSize = Int(bytes[trailer + 7])
        guard [1, 2, 4, 8].contains(offsetIntSize) else {
            throw .corrupt(reason: "invalid offset size in trailer")
        }
        guard [1, 2, 4, 8].contains(objectRefSize) else {
            throw .corrupt(reason: "invalid object reference size in trailer")
        }
        let objectCount = UInt64(bigEndian: base.loadUnaligned(fromByteOffset: trailer + 8, as: UInt64.self))
        let topObject = UInt64(bigEndian: base.loadUnaligned(fromByteOffset: trailer + 16, as: UInt64.self))
        let tableOffset = UInt64(bigEndian: base.loadUnaligned(fromByteOffset: trailer + 24, as: UInt64.self))
        guard objectCount >= 1, objectCount <= UInt64(size), objectCount < UInt64(Int32.max) else {
            throw .corrupt(reason: "object count out of range")
        }
        guard topObject < objectCount else {
            throw .corrupt(reason: "top object out of range")
        }
        let (tableLength, overflow) = objectCount.multipliedReportingOverflow(by: UInt64(offsetIntSize))
        guard tableOffset > UInt64(Self.headerSize), tableOffset <= UInt64(trailer), !overflow,
            tableLength <= UInt64(trailer) - tableOffset
        else {
            throw .corrupt(reason: "offset table out of range")
        }
        self.base = base
        self.objectsEnd = Int(tableOffset)
        self.offsetIntSize = offsetIntSize
        self.objectRefSize = objectRefSize
        self.objectCount = Int(objectCount)
        self.topObject = Int(topObject)
    }

    @inline(__always)
    func byte(at offset: Int) -> UInt8 {
        base.load(fromByteOffset: offset, as: UInt8.self)
    }

    /// A big-endian unsigned integer of `size` (1, 2, 4 or 8) bytes; the caller checked bounds.
    @inline(__always)
    func unsigned(at offset: Int, size: Int) -> UInt64 {
        switch size {
        case 1: UInt64(byte(at: offset))
        case 2: UInt64(UInt16(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
        case 4: UInt64(UInt32(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        default: UInt64(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }
    }

    /// Where object `index` starts; `index` is below `objectCount`.
    @inline(__always)
    func objectOffset(_ index: Int) throws(SecureDictionaryError) -> Int {
        let offset = unsigned(at: objectsEnd + index * offsetIntSize, size: offsetIntSize)
        guard offset >= UInt64(Self.headerSize), offset < UInt64(objectsEnd) else {
            throw .corrupt(reason: "object offset out of range")
        }
        return Int(offset)
    }

    /// The object reference stored at `offset`; the caller checked bounds.
    @inline(__always)
    func reference(at offset: Int) throws(SecureDictionaryError) -> Int {
        let index = unsigned(at: offset, size: objectRefSize)
        guard index < UInt64(objectCount) else {
            throw .corrupt(reason: "object reference out of range")
        }
        return Int(index)
    }

    /// Checks that `length` bytes from `start` lie inside the object area.
    @inline(__always)
    func requireBytes(_ length: Int, at start: Int) throws(SecureDictionaryError) {
        guard start <= objectsEnd, length <= objectsEnd - start else {
            throw .corrupt(reason: "object extends past the object area")
        }
    }

    /// The count in the marker's low nibble (or the integer after a 0xF) and where the contents
    /// start, `count * unitSize` bytes checked to fit.
    func countAndStart(
        marker: UInt8, offset: Int, unitSize: Int
    ) throws(SecureDictionaryError) -> (count: Int, start: Int) {
        var count = Int(marker & 0x0F)
        var start = offset + 1
        if count == 0x0F {
            try requireBytes(1, at: start)
            let lengthMarker = byte(at: start)
            guard lengthMarker & 0xF0 == 0x10, lengthMarker & 0x0F <= 3 else {
                throw .corrupt(reason: "invalid length of an object")
            }
            let width = 1 << Int(lengthMarker & 0x0F)
            try requireBytes(width, at: start + 1)
            count = Int(clamping: unsigned(at: start + 1, size: width))
            start += 1 + width
        }
        // A count too large for the area (or whose length overflows) fails here, however large.
        let (length, overflow) = count.multipliedReportingOverflow(by: unitSize)
        try requireBytes(overflow ? .max : length, at: start)
        return (count, start)
    }

    /// A container: `count` elements whose references start at `references` (a dictionary's keys,
    /// then its values), and the writer's order of a dictionary's entries (`nil`: as stored).
    struct Container {
        let count: Int
        let references: Int
        let isDictionary: Bool
        var order: [Int]? = nil

        /// The entry at `position` in the writer's order (by the keys' UTF-8 bytes).
        func entry(inOrder position: Int) -> Int { order?[position] ?? position }
    }

    /// The container object `index`; with `ordered`, a dictionary's keys checked and put in the
    /// writer's order (``keys(of:depth:)``).
    func container(_ index: Int, ordered: Bool = false) throws(SecureDictionaryError) -> Container {
        let offset = try objectOffset(index)
        let marker = byte(at: offset)
        let isDictionary = marker & 0xF0 == 0xD0
        let (count, start) = try countAndStart(marker: marker, offset: offset, unitSize: (isDictionary ? 2 : 1) * objectRefSize)
        var container = Container(count: count, references: start, isDictionary: isDictionary)
        if ordered && isDictionary { container.order = try keys(of: container).order }
        return container
    }

    /// The key object of entry `entry` of the dictionary `container`.
    func keyObject(_ entry: Int, of container: Container) throws(SecureDictionaryError) -> Int {
        try reference(at: container.references + entry * objectRefSize)
    }

    /// The value object of entry `entry` of `container` (an array's element).
    func valueObject(_ entry: Int, of container: Container) throws(SecureDictionaryError) -> Int {
        try reference(at: container.references + ((container.isDictionary ? container.count : 0) + entry) * objectRefSize)
    }
}
