/// Reading the blob's bytes, every offset checked against its bounds first.
extension BinaryPropertyListReader {
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
    func objectOffset(_ index: Int) throws(BinaryPropertyListError) -> Int {
        let offset = unsigned(at: objectsEnd + index * offsetIntSize, size: offsetIntSize)
        guard offset >= UInt64(Self.headerSize), offset < UInt64(objectsEnd) else {
            throw .corrupt(reason: "object offset out of range")
        }
        return Int(offset)
    }

    /// The object reference stored at `offset`; the caller checked bounds.
    @inline(__always)
    func reference(at offset: Int) throws(BinaryPropertyListError) -> Int {
        let index = unsigned(at: offset, size: objectRefSize)
        guard index < UInt64(objectCount) else {
            throw .corrupt(reason: "object reference out of range")
        }
        return Int(index)
    }

    /// Checks that `length` bytes from `start` lie inside the object area.
    @inline(__always)
    func requireBytes(_ length: Int, at start: Int) throws(BinaryPropertyListError) {
        guard start <= objectsEnd, length <= objectsEnd - start else {
            throw .corrupt(reason: "object extends past the object area")
        }
    }

    /// The element count in the marker's low nibble (or the integer after it when the nibble is
    /// 0xF) and where the contents start, after checking that `count * unitSize` bytes fit.
    func countAndStart(
        marker: UInt8, offset: Int, unitSize: Int
    ) throws(BinaryPropertyListError) -> (count: Int, start: Int) {
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
            let length = unsigned(at: start + 1, size: width)
            guard length <= UInt64(objectsEnd) else {
                throw .corrupt(reason: "object extends past the object area")
            }
            count = Int(length)
            start += 1 + width
        }
        let (length, overflow) = count.multipliedReportingOverflow(by: unitSize)
        guard !overflow else {
            throw .corrupt(reason: "object extends past the object area")
        }
        try requireBytes(length, at: start)
        return (count, start)
    }
}
