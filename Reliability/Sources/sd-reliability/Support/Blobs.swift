import Foundation
import SecureDictionary

/// Hand-made binary property lists, valid and hostile.
enum Blobs {
    static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8)) }
    }

    /// An ASCII string object of fewer than 15 characters.
    static func ascii(_ string: String) -> [UInt8] { [0x50 | UInt8(string.utf8.count)] + Array(string.utf8) }

    /// Header, `objects` in order, offset table, trailer: any layout, valid or not.
    static func make(_ objects: [[UInt8]], top: UInt64 = 0, referenceSize: UInt8 = 1) -> [UInt8] {
        var blob = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(blob.count)
            blob += object
        }
        let table = blob.count
        let width: UInt8 = table <= 0xFF ? 1 : table <= 0xFFFF ? 2 : 4
        for offset in offsets { blob += bigEndian(UInt64(offset)).suffix(Int(width)) }
        blob += [0, 0, 0, 0, 0, 0, width, referenceSize]
        blob += bigEndian(UInt64(objects.count)) + bigEndian(top) + bigEndian(UInt64(table))
        return blob
    }

    /// A small valid dictionary with every kind of container.
    static let valid: [UInt8] = {
        let entries: [String: PropertyListValue] = [
            "a": 1, "b": ["x", 2.5, true], "c": ["d": .data(Data([1, 2]))], "s": "hello",
        ]
        return (try? [UInt8](BinaryPropertyListCoding.encode(entries))) ?? []
    }()

    /// `{"k": set([1])}`: Foundation on Linux segfaults on this (design § 5).
    static let set: [UInt8] = make([[0xD1, 0x01, 0x02], ascii("k"), [0xC1, 0x03], [0x10, 0x01]])

    /// `{"k": UID(1)}`.
    static let uid: [UInt8] = make([[0xD1, 0x01, 0x02], ascii("k"), [0x80, 0x01]])

    /// A real NSKeyedArchiver archive (encoding with Foundation is safe; decoding is not).
    static var keyedArchive: [UInt8] {
        (try? [UInt8](
            NSKeyedArchiver.archivedData(
                withRootObject: ["a": "b"] as NSDictionary,
                requiringSecureCoding: false))) ?? []
    }

    /// Object n + 1 is the array [n, n]: 2^levels arrays once expanded. With an array root and
    /// 24 levels it is 138 bytes, the size of the plist Foundation spends 11.7 s on.
    static func exponential(levels: Int, dictionaryRoot: Bool) -> [UInt8] {
        if dictionaryRoot {
            var objects: [[UInt8]] = [[0xD1, 0x01, UInt8(levels + 2)], ascii("k"), [0xA0]]
            for previous in 2..<(levels + 2) { objects.append([0xA2, UInt8(previous), UInt8(previous)]) }
            return make(objects)
        }
        var objects: [[UInt8]] = [[0xA0]]
        for previous in 0..<levels { objects.append([0xA2, UInt8(previous), UInt8(previous)]) }
        return make(objects, top: UInt64(levels))
    }

    /// `levels` nested arrays under a dictionary root (2-byte references).
    static func deep(levels: Int) -> [UInt8] {
        var objects: [[UInt8]] = [[0xD1, 0x00, 0x01, 0x00, 0x02], ascii("k")]
        for level in 0..<levels {
            let next = level + 3
            objects.append(level == levels - 1 ? [0xA0] : [0xA1, UInt8(next >> 8), UInt8(next & 0xFF)])
        }
        return make(objects, referenceSize: 2)
    }

    /// Roots that are not dictionaries.
    static let wrongRoots: [(String, [UInt8])] = [
        ("array", make([[0xA1, 0x01], ascii("k")])),
        ("string", make([ascii("k")])),
        ("integer", make([[0x10, 0x01]])),
        ("real", make([[0x23] + bigEndian(0x3FF0_0000_0000_0000)])),
        ("bool", make([[0x09]])),
        ("data", make([[0x42, 0x01, 0x02]])),
        ("date", make([[0x33] + bigEndian(0)])),
    ]

    static let xml: [UInt8] = Array(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict><key>k</key><string>v</string></dict></plist>
        """.utf8)

    static let text: [UInt8] = Array("apiToken=s3cr3t\nrefresh=r-123\nthis is not a property list at all\n".utf8)
}
