/// Binary property lists laid out byte by byte, valid or hostile, for tests of the reader.
///
/// ```swift
/// let set = HandMadeBlob.make([[0xD1, 0x01, 0x02], HandMadeBlob.ascii("k"), [0xC1, 0x03], [0x10, 0x01]])
/// let lying = HandMadeBlob.make([[0xD0]], objectCount: 1 << 40)   // a trailer that lies
/// ```
public enum HandMadeBlob {
    /// `value` as 8 bytes, most significant first.
    public static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) }
    }

    /// An ASCII string object of fewer than 15 characters.
    public static func ascii(_ string: String) -> [UInt8] {
        [0x50 | UInt8(string.utf8.count)] + Array(string.utf8)
    }

    /// Header, `objects` in order, offset table, trailer: any layout, valid or not. Every
    /// trailer field can be overridden to build a hostile blob; by default it describes the
    /// objects as laid out (offsets of the smallest of 1, 2 or 4 bytes that fits).
    public static func make(
        _ objects: [[UInt8]],
        top: UInt64 = 0,
        referenceSize: UInt8 = 1,
        offsetSize: UInt8? = nil,
        objectCount: UInt64? = nil,
        tableOffset: UInt64? = nil
    ) -> [UInt8] {
        var blob = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(blob.count)
            blob += object
        }
        let table = blob.count
        let width = offsetSize ?? (table <= 0xFF ? 1 : table <= 0xFFFF ? 2 : 4)
        for offset in offsets {
            blob += bigEndian(UInt64(offset)).suffix(Int(min(width, 8)))
        }
        blob += [0, 0, 0, 0, 0, 0, width, referenceSize]
        blob += bigEndian(objectCount ?? UInt64(objects.count)) + bigEndian(top) + bigEndian(tableOffset ?? UInt64(table))
        return blob
    }
}
