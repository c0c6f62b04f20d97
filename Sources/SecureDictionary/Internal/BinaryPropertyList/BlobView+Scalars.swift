import FoundationEssentials

/// Scalar objects as the caller's values (``PropertyListValue``), each built in one allocation
/// of its final storage. Reads are bounds-checked first; the loads are then unchecked, unaligned.
extension BlobView {
    /// Decodes the scalar at `offset` whose marker byte is `marker`: the common ones inlined in
    /// the caller, the rest in ``otherScalar(marker:offset:)``.
    @inline(__always)
    func scalar(marker: UInt8, offset: Int) throws(SecureDictionaryError) -> PropertyListValue {
        switch marker {
        case 0x08:
            return .bool(false)
        case 0x09:
            return .bool(true)
        case 0x10...0x13:  // 1, 2 and 4-byte integers are unsigned, 8-byte ones signed (their bit pattern)
            let size = 1 << Int(marker & 0x0F)
            try requireBytes(size, at: offset + 1)
            return .integer(Int(truncatingIfNeeded: unsigned(at: offset + 1, size: size)))
        case 0x23, 0x33:
            try requireBytes(8, at: offset + 1)
            let double = Double(bitPattern: unsigned(at: offset + 1, size: 8))
            return marker == 0x23 ? .real(double) : .date(Date(timeIntervalSinceReferenceDate: double))
        case 0x50...0x5E:
            let count = Int(marker & 0x0F)
            try requireBytes(count, at: offset + 1)
            return .string(try shortASCIIString(count: count, at: offset + 1))
        default:
            return try otherScalar(marker: marker, offset: offset)
        }
    }

    /// ``scalar(marker:offset:)`` for the types it does not read inline, and the rejected ones.
    private func otherScalar(marker: UInt8, offset: Int) throws(SecureDictionaryError) -> PropertyListValue {
        switch marker {
        case 0x14:
            // 16 bytes: how Apple and Python write values above `Int64.max`; accepted across the
            // whole range binary plists carry, `Int64.min…UInt64.max`, and only there.
            try requireBytes(16, at: offset + 1)
            let high = unsigned(at: offset + 1, size: 8)
            let low = unsigned(at: offset + 9, size: 8)
            let lowIsNegative = low >> 63 == 1
            if high == 0 {
                return lowIsNegative ? .unsignedInteger(low) : .integer(Int(low))
            }
            guard high == .max && lowIsNegative else { throw .corrupt(reason: "integer out of range") }
            return .integer(Int(truncatingIfNeeded: Int64(bitPattern: low)))
        case 0x22:
            try requireBytes(4, at: offset + 1)
            let bits = UInt32(truncatingIfNeeded: unsigned(at: offset + 1, size: 4))
            return .real(Double(Float(bitPattern: bits)))
        case 0x40...0x4F:
            let (count, start) = try countAndStart(marker: marker, offset: offset, unitSize: 1)
            return .data(Data(bytes: base + start, count: count))
        case 0x50...0x6F:
            // An unpaired surrogate is corrupt: Foundation and `String(decoding:)` would replace it silently.
            return .string(try string(marker: marker, offset: offset)!.string())
        case 0x00:
            throw .corrupt(reason: "null objects are not supported")
        case 0x0F:
            throw .corrupt(reason: "fill objects are not supported")
        case 0x80...0x8F:
            throw .corrupt(reason: "UIDs (keyed archives) are not supported")
        case 0xB0...0xCF:
            throw .corrupt(reason: "sets are not supported")
        default:
            throw .corrupt(reason: "unknown object type")
        }
    }

    /// The ASCII string of `count` (0 to 15) bytes at `start`; the caller checked bounds. Read
    /// as at most two 8-byte words, the second ending where the string ends: it may start
    /// before the string, never before the blob, as every object starts past the 8-byte header
    /// (``objectOffset(_:)``).
    @inline(__always)
    private func shortASCIIString(count: Int, at start: Int) throws(SecureDictionaryError) -> String {
        guard count > 0 else { return "" }
        let last = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: start + count - 8, as: UInt64.self))
        let leading: UInt64
        let trailing: UInt64
        if count <= 8 {
            leading = last >> (8 * (8 - count))
            trailing = 0
        } else {
            leading = UInt64(littleEndian: base.loadUnaligned(fromByteOffset: start, as: UInt64.self))
            trailing = last >> (8 * (16 - count))
        }
        guard (leading | trailing) & 0x8080_8080_8080_8080 == 0 else {
            throw .corrupt(reason: "non-ASCII byte in an ASCII string")
        }
        return String(decoding: UnsafeRawBufferPointer(start: base + start, count: count), as: UTF8.self)
    }

    /// Whether every byte is below 0x80, eight bytes at a time.
    static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let start = bytes.baseAddress else { return true }
        let count = bytes.count
        var index = 0
        while index + 8 <= count {
            if start.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 {
                return false
            }
            index += 8
        }
        while index < count {
            if start.load(fromByteOffset: index, as: UInt8.self) >= 0x80 { return false }
            index += 1
        }
        return true
    }
}
