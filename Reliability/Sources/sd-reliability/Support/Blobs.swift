import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// Hand-made binary property lists, valid and hostile.
enum Blobs {
    /// A small valid dictionary with every kind of container.
    static let valid: [UInt8] = {
        let entries: [String: PropertyListValue] = [
            "a": 1, "b": ["x", 2.5, true], "c": ["d": .data(Data([1, 2]))], "s": "hello",
        ]
        return (try? [UInt8](BinaryPropertyListCoding.encode(entries))) ?? []
    }()

    /// `{"k": set([1])}`: Foundation on Linux segfaults on this (design § 5).
    static let set: [UInt8] = HandMadeBlob.make([[0xD1, 0x01, 0x02], HandMadeBlob.ascii("k"), [0xC1, 0x03], [0x10, 0x01]])

    /// `{"k": UID(1)}`.
    static let uid: [UInt8] = HandMadeBlob.make([[0xD1, 0x01, 0x02], HandMadeBlob.ascii("k"), [0x80, 0x01]])

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
            var objects: [[UInt8]] = [[0xD1, 0x01, UInt8(levels + 2)], HandMadeBlob.ascii("k"), [0xA0]]
            for previous in 2..<(levels + 2) { objects.append([0xA2, UInt8(previous), UInt8(previous)]) }
            return HandMadeBlob.make(objects)
        }
        var objects: [[UInt8]] = [[0xA0]]
        for previous in 0..<levels { objects.append([0xA2, UInt8(previous), UInt8(previous)]) }
        return HandMadeBlob.make(objects, top: UInt64(levels))
    }

    /// `levels` nested arrays under a dictionary root (2-byte references).
    static func deep(levels: Int) -> [UInt8] {
        var objects: [[UInt8]] = [[0xD1, 0x00, 0x01, 0x00, 0x02], HandMadeBlob.ascii("k")]
        for level in 0..<levels {
            let next = level + 3
            objects.append(level == levels - 1 ? [0xA0] : [0xA1, UInt8(next >> 8), UInt8(next & 0xFF)])
        }
        return HandMadeBlob.make(objects, referenceSize: 2)
    }

    /// Roots that are not dictionaries.
    static let wrongRoots: [(String, [UInt8])] = [
        ("array", HandMadeBlob.make([[0xA1, 0x01], HandMadeBlob.ascii("k")])),
        ("string", HandMadeBlob.make([HandMadeBlob.ascii("k")])),
        ("integer", HandMadeBlob.make([[0x10, 0x01]])),
        ("real", HandMadeBlob.make([[0x23] + HandMadeBlob.bigEndian(0x3FF0_0000_0000_0000)])),
        ("bool", HandMadeBlob.make([[0x09]])),
        ("data", HandMadeBlob.make([[0x42, 0x01, 0x02]])),
        ("date", HandMadeBlob.make([[0x33] + HandMadeBlob.bigEndian(0)])),
    ]

    static let xml: [UInt8] = Array(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict><key>k</key><string>v</string></dict></plist>
        """.utf8)

    static let text: [UInt8] = Array("apiToken=s3cr3t\nrefresh=r-123\nthis is not a property list at all\n".utf8)
}
