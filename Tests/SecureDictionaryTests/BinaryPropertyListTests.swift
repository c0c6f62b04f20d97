import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

// Tests of the binary property list codec. Foundation's PropertyListSerialization only ever
// sees our own output or values we built (trusted input): it must never see a hostile blob.

// MARK: - Round trips

@Suite("Binary property list: round trips")
struct BinaryPropertyListRoundTripTests {
    @Test("every value round-trips alone, at the root and inside an array", arguments: edgeCaseValues)
    func roundTripsAlone(_ value: PropertyListValue) throws {
        let entries: [String: PropertyListValue] = ["k": value, "wrapped": [value]]
        let decoded = try roundTrip(entries)
        #expect(identical(decoded, entries))
    }

    @Test("all edge cases together in one nested dictionary")
    func roundTripsTogether() throws {
        var entries: [String: PropertyListValue] = [:]
        for (position, value) in edgeCaseValues.enumerated() {
            entries["key \(position)"] = value
        }
        entries["nested"] = .dictionary(entries)
        entries["list"] = .array(edgeCaseValues)
        entries[""] = "empty key"
        entries["ключ 🔑"] = "non-ASCII key"
        entries["a\u{0}b"] = "key with NUL"
        let decoded = try roundTrip(entries)
        #expect(identical(decoded, entries))
    }

    @Test("an empty root dictionary")
    func emptyRoot() throws {
        let blob = try BinaryPropertyList.encode([:], limits: .default)
        #expect(blob.count == 8 + 1 + 1 + 32)
        #expect(try BinaryPropertyList.decode(blob, limits: .default).isEmpty)
    }

    @Test("large dictionaries, beyond the reservation the reader makes ahead of reading")
    func largeDictionaries() throws {
        for count in [4_095, 4_097, 20_000] {
            var entries: [String: PropertyListValue] = [:]
            for index in 0..<count {
                entries["k\(index)"] = index.isMultiple(of: 2) ? .integer(index) : ["v": .string("value \(index)")]
            }
            #expect(identical(try roundTrip(entries), entries))
        }
    }

    @Test("-0.0 and NaN payloads keep their bits; integer, real and bool stay apart")
    func bitExactReals() throws {
        let payloadNaN = Double(bitPattern: 0x7FF8_0000_0000_1234)
        let decoded = try roundTrip([
            "negativeZero": .real(-0.0), "nan": .real(payloadNaN),
            "one": .integer(1), "oneReal": .real(1.0), "true": .bool(true),
            "zero": .integer(0), "zeroReal": .real(0.0), "false": .bool(false),
        ])
        #expect(decoded["negativeZero"]?.realValue?.bitPattern == (-0.0 as Double).bitPattern)
        #expect(decoded["nan"]?.realValue?.bitPattern == payloadNaN.bitPattern)
        #expect(decoded["one"] == .integer(1))
        #expect(decoded["oneReal"] == .real(1.0))
        #expect(decoded["true"] == .bool(true))
        #expect(decoded["zero"] == .integer(0))
        #expect(decoded["zeroReal"] == .real(0.0))
        #expect(decoded["false"] == .bool(false))
    }

    @Test("a decomposed key keeps its exact bytes")
    func decomposedKey() throws {
        let key = "e\u{301}"
        let decoded = try roundTrip([key: "value"])
        #expect(decoded.keys.first.map { Array($0.utf8) } == Array(key.utf8))
    }

    @Test("the same dictionary always encodes to the same bytes")
    func deterministic() throws {
        let keys = (0..<200).map { "key-\($0)" }
        var forward: [String: PropertyListValue] = [:]
        for key in keys { forward[key] = ["inner-\(key)": .string(key), "b": 1, "a": 2] }
        var backward = [String: PropertyListValue](minimumCapacity: 1000)
        for key in keys.reversed() { backward[key] = ["a": 2, "b": 1, "inner-\(key)": .string(key)] }
        let first = try BinaryPropertyList.encode(forward, limits: .default)
        #expect(first == (try BinaryPropertyList.encode(backward, limits: .default)))
        #expect(first == (try BinaryPropertyList.encode(forward, limits: .default)))
    }

    @Test(
        "keys are written sorted by their UTF-8 bytes, whatever the insertion order",
        arguments: [
            [
                "", "a", "a\u{0}", "a\u{0}b", "ab", "b", "B", "é", "ö", "中", "😀", "\u{FFFD}", "z", "~", "e\u{301}x",
                "com.example.a", "com.example.b",
            ],
            [
                "com.example.", "com.example.a", "com.example.ab", "com.example.abcdefgh", "com.example.abcdefghi",
                "com.example.abcdefgh\u{0}", "com.example.abcdefgha", "com.example.b", "com.example.é",
                "com.example.abcdefgh\u{0}\u{0}", "com.example.abcdefgh\u{0}a", "com.example.abcdefghijklmnop",
                "com.example.abcdefghijklmnoq", "com.example.abcdefghijklmno", "com.example.😀", "com.example.ü",
            ],
            manyKeys(),
        ])
    func keyOrder(_ keys: [String]) throws {
        let expected = keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        for insertion in [keys, keys.reversed(), expected, expected.reversed()] {
            var entries = [String: PropertyListValue](minimumCapacity: insertion.count * 3)
            for key in insertion { entries[key] = .string(key) }
            let written = writtenKeyOrder(try BinaryPropertyList.encode(entries, limits: .default))
            #expect(written.map { Array($0.utf8) } == expected.map { Array($0.utf8) })
        }
        // For keys in NFC, that is also String's `<`.
        let normalized = keys.filter { $0 != "e\u{301}x" }
        #expect(
            normalized.sorted().map { Array($0.utf8) }
                == normalized.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { Array($0.utf8) })
    }

    /// Many keys, with runs of keys that share 8 or more bytes: groups
    /// under shared prefixes with one outlier, NUL bytes against the end of a key, and keys
    /// that are prefixes of each other.
    static func manyKeys() -> [String] {
        var keys = Set<String>()
        for index in 0..<400 {
            keys.insert("setting-" + String(repeating: "0", count: 5 - String(index).count) + String(index))
            keys.insert("com.example.settings.group\(index % 3).\(index)")
            keys.insert(
                "a" + String(repeating: "\u{0}", count: index % 11) + "b\(index % 7)" + String(repeating: "z", count: index % 17))
        }
        for length in 0..<80 {
            keys.insert(String(repeating: "q", count: length))
            keys.insert("q" + String(repeating: "\u{0}", count: length))
        }
        keys.insert("mutated")
        return Array(keys)
    }

    @Test(
        "integers use the smallest encoding; negative ones use 8 bytes",
        arguments: [
            (0, 0x10), (255, 0x10), (256, 0x11), (65_535, 0x11), (65_536, 0x12),
            (Int(UInt32.max), 0x12), (Int(UInt32.max) + 1, 0x13), (Int.max, 0x13),
            (-1, 0x13), (Int.min, 0x13),
        ] as [(Int, UInt8)])
    func integerWidths(_ value: Int, _ marker: UInt8) throws {
        // Header (8), root dictionary 0xD1 + 2 references (3), key "k" (2): the value is at 13.
        let blob = try BinaryPropertyList.encode(["k": .integer(value)], limits: .default)
        #expect(blob[13] == marker)
        #expect(try BinaryPropertyList.decode(blob, limits: .default)["k"] == .integer(value))
    }

    @Test("strings are ASCII when they can be, else UTF-16; long lengths follow the marker")
    func stringMarkers() throws {
        func valueBytes(_ string: String) throws -> ArraySlice<UInt8> {
            try BinaryPropertyList.encode(["k": .string(string)], limits: .default)[13...]
        }
        #expect(try valueBytes("abc").starts(with: [0x53, 0x61, 0x62, 0x63]))
        #expect(try valueBytes("a\u{0}b").starts(with: [0x53, 0x61, 0x00, 0x62]))
        #expect(try valueBytes("é").starts(with: [0x61, 0x00, 0xE9]))
        #expect(try valueBytes("😀").starts(with: [0x62, 0xD8, 0x3D, 0xDE, 0x00]))
        #expect(try valueBytes(String(repeating: "x", count: 15)).starts(with: [0x5F, 0x10, 0x0F]))
        #expect(try valueBytes(String(repeating: "x", count: 300)).starts(with: [0x5F, 0x11, 0x01, 0x2C]))
    }

    @Test("reals are always 8 bytes, dates 0x33, booleans 0x08 and 0x09")
    func otherMarkers() throws {
        #expect(try BinaryPropertyList.encode(["k": .real(1.5)], limits: .default)[13] == 0x23)
        #expect(try BinaryPropertyList.encode(["k": .date(Date())], limits: .default)[13] == 0x33)
        #expect(try BinaryPropertyList.encode(["k": .bool(false)], limits: .default)[13] == 0x08)
        #expect(try BinaryPropertyList.encode(["k": .bool(true)], limits: .default)[13] == 0x09)
    }

    @Test(
        "reference and offset sizes are minimal",
        arguments: [
            (1, 1, 1), (200, 2, 2), (40_000, 4, 4),
        ] as [(Int, UInt8, UInt8)])
    func minimalSizes(entries count: Int, referenceSize: UInt8, offsetSize: UInt8) throws {
        var entries: [String: PropertyListValue] = [:]
        for index in 0..<count { entries["k\(index)"] = .integer(index) }
        let blob = try BinaryPropertyList.encode(entries, limits: .default)
        let trailer = blob.count - 32
        #expect(blob[trailer + 6] == offsetSize)
        #expect(blob[trailer + 7] == referenceSize)
        #expect(try BinaryPropertyList.decode(blob, limits: .default).count == count)
    }

    @Test("both decode overloads agree, and decoding an empty buffer is corrupt")
    func overloads() throws {
        let blob = try BinaryPropertyList.encode(["a": [1, "b"]], limits: .default)
        let fromPointer = try blob.withUnsafeBytes { try BinaryPropertyList.decode($0, limits: .default) }
        #expect(fromPointer == (try BinaryPropertyList.decode(blob, limits: .default)))
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        #expect(throws: SecureDictionaryError.self) { try BinaryPropertyList.decode(empty, limits: .default) }
    }

    @Test("reads valid but unusual encodings: wide sizes, long-form counts, shared scalars, float32")
    func unusualButValid() throws {
        // refSize 8 and offsetSize 8; the root is the last object; "k" is shared as key and value.
        let objects: [[UInt8]] = [
            [0x51, 0x6B],  // 0: "k"
            [0xAF, 0x10, 0x03] + ref8(0) + ref8(0) + ref8(2),  // 1: ["k", "k", 1.5]
            [0x22, 0x3F, 0xC0, 0x00, 0x00],  // 2: float32 1.5
            [0x14] + [UInt8](repeating: 0xFF, count: 8) + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFB],  // 3: -5
            [0xD3] + ref8(0) + ref8(5) + ref8(6) + ref8(1) + ref8(3) + ref8(7),
            [0x51, 0x6E],  // 5: "n"
            [0x51, 0x73],  // 6: "s"
            [0x14] + [UInt8](repeating: 0, count: 15) + [0x07],  // 7: 7 in 16 bytes
        ]
        let blob = HandMadeBlob.make(objects, top: 4, referenceSize: 8, offsetSize: 8)
        let decoded = try BinaryPropertyList.decode(blob, limits: .default)
        #expect(decoded == ["k": ["k", "k", .real(1.5)], "n": .integer(-5), "s": .integer(7)])
    }
}

// MARK: - Foundation cross-check (trusted inputs only)

@Suite("Binary property list: Foundation agrees")
struct BinaryPropertyListFoundationTests {
    static let sample: [String: PropertyListValue] = [
        "string": "hello", "unicode": "héllo wörld 😀 中文", "nul": "a\u{0}b", "empty": "",
        "long": .string(String(repeating: "abc", count: 100)),
        "int": 42, "big": .integer(Int.max), "small": .integer(Int.min), "negative": -1,
        "u32": .integer(Int(UInt32.max) + 1), "real": 3.25, "wholeReal": 1.0, "tiny": .real(.leastNonzeroMagnitude),
        "true": true, "false": false,
        "date": .date(Date(timeIntervalSinceReferenceDate: 123_456_789.123_456)),
        "data": .data(Data((0..<300).map { UInt8($0 % 256) })), "emptyData": .data(Data()),
        "array": [1, "two", 3.0, false, [], [:]], "emptyArray": [], "emptyDictionary": [:],
        "nested": ["a": ["b": ["c": [1, 2, 3]]], "ключ": "значение"],
    ]

    @Test("Foundation reads our output as the same values")
    func foundationReadsOurs() throws {
        let blob = try BinaryPropertyList.encode(Self.sample, limits: .default)
        let object = try PropertyListSerialization.propertyList(from: Data(blob), options: [], format: nil)
        #expect(fromFoundation(object).map { identical($0, .dictionary(Self.sample)) } == true)
    }

    @Test("we read Foundation's output as the same values")
    func weReadFoundations() throws {
        let blob = try PropertyListSerialization.data(
            fromPropertyList: PropertyListValue.dictionary(Self.sample).foundationObject, format: .binary, options: 0)
        let decoded = try BinaryPropertyList.decode([UInt8](blob), limits: .default)
        #expect(identical(decoded, Self.sample))
    }

    @Test("Foundation's 16-byte integer above Int.max opens exactly")
    func foundationHugeInteger() throws {
        let blob = try PropertyListSerialization.data(
            fromPropertyList: ["k": NSNumber(value: UInt64.max)], format: .binary, options: 0)
        #expect(try BinaryPropertyList.decode([UInt8](blob), limits: .default) == ["k": .unsignedInteger(.max)])
    }

    @Test("a real NSKeyedArchiver archive is rejected")
    func keyedArchive() throws {
        let archive = try NSKeyedArchiver.archivedData(
            withRootObject: ["a": "b"] as NSDictionary,
            requiringSecureCoding: false)
        try #require(archive.starts(with: Array("bplist00".utf8)))
        expectCorrupt([UInt8](archive))
    }
}

// MARK: - Hostile input

@Suite("Binary property list: hostile input")
struct BinaryPropertyListHostileTests {
    static let validBlob: [UInt8] = {
        let entries: [String: PropertyListValue] = ["a": 1, "b": ["x", 2.5, true], "c": ["d": .data(Data([1, 2]))]]
        return (try? BinaryPropertyList.encode(entries, limits: .default)) ?? []
    }()

    @Test("not a binary property list: empty, short, wrong magic, XML, text, random bytes")
    func notABinaryPlist() {
        expectCorrupt([])
        expectCorrupt(Array("bplist".utf8))
        expectCorrupt(Array("bplist00".utf8))
        expectCorrupt(Array("bplisx00".utf8) + Self.validBlob.dropFirst(8))
        expectCorrupt(Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\"><dict/></plist>".utf8))
        expectCorrupt(Array("just some plain text, long enough to hold a trailer and more".utf8))
        var generator = SplitMix64(seed: 7)
        for _ in 0..<500 {
            let length = Int.random(in: 0..<200, using: &generator)
            expectCorrupt((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
    }

    @Test("another version is unsupported, with only the two version characters, made printable")
    func versions() {
        #expect(decodeError(Array("bplist15".utf8)) == .unsupportedFormatVersion("15"))
        #expect(
            decodeError(Array("bplist1".utf8) + [0xFF] + Self.validBlob.dropFirst(8))
                == .unsupportedFormatVersion("1?"))
    }

    @Test("every truncation of a valid blob is corrupt")
    func truncations() throws {
        try #require(!Self.validBlob.isEmpty)
        for length in 0..<Self.validBlob.count {
            expectCorrupt(Array(Self.validBlob.prefix(length)))
        }
    }

    @Test(
        "unsupported object types are corrupt",
        arguments: [
            [0x00], [0x0F], [0x80, 0x01], [0xC1, 0x01], [0xB1, 0x01], [0x15] + [UInt8](repeating: 0, count: 32),
            [0x20, 0x00], [0x21, 0x00, 0x00], [0x30], [0x70], [0x90], [0xE0], [0xF0],
        ] as [[UInt8]])
    func unsupportedTypes(_ object: [UInt8]) {
        expectCorrupt(HandMadeBlob.make([[0xD1, 0x01, 0x02], [0x51, 0x6B], object]))
    }

    @Test("the root must be a dictionary")
    func rootNotDictionary() {
        expectCorrupt(HandMadeBlob.make([[0xA1, 0x01], [0x51, 0x6B]]))
        expectCorrupt(HandMadeBlob.make([[0x51, 0x6B]]))
        expectCorrupt(HandMadeBlob.make([[0x10, 0x01]]))
    }

    @Test("keys must be distinct strings")
    func badKeys() {
        expectCorrupt(HandMadeBlob.make([[0xD1, 0x01, 0x02], [0x10, 0x01], [0x51, 0x76]]))  // integer key
        expectCorrupt(HandMadeBlob.make([[0xD1, 0x01, 0x02], [0xA0], [0x51, 0x76]]))  // array key
        expectCorrupt(HandMadeBlob.make([[0xD1, 0x00, 0x01], [0x51, 0x76]]))  // itself as key
        expectCorrupt(HandMadeBlob.make([[0xD2, 0x01, 0x01, 0x02, 0x02], [0x51, 0x6B], [0x09]]))  // shared key
        expectCorrupt(HandMadeBlob.make([[0xD2, 0x01, 0x02, 0x03, 0x03], [0x51, 0x6B], [0x51, 0x6B], [0x09]]))
        // The same scalars written two ways (UTF-16 "k" and ASCII "k") are one key too.
        expectCorrupt(HandMadeBlob.make([[0xD2, 0x01, 0x02, 0x03, 0x03], [0x61, 0x00, 0x6B], [0x51, 0x6B], [0x09]]))
    }

    @Test("\"é\" and \"e\\u{301}\": other scalars, so two keys (which a Swift dictionary holds as one)")
    func canonicallyEquivalentKeysAreTwoKeys() throws {
        let blob = HandMadeBlob.make([
            [0xD2, 0x01, 0x02, 0x03, 0x04], [0x61, 0x00, 0xE9], [0x62, 0x00, 0x65, 0x03, 0x01], [0x08], [0x09],
        ])
        let entries = try BinaryPropertyList.decode(blob, limits: .default)
        #expect(entries.count == 1)  // the caller's Swift dictionary: one of them
        let generation = try blob.withUnsafeBytes { try Generation(copying: $0, limits: .default) }
        #expect(generation.count == 2)
        #expect(generation.value(forKey: "\u{E9}") == .bool(false))
        #expect(generation.value(forKey: "e\u{301}") == .bool(true))
    }

    @Test("a dictionary that claims more entries than it holds is corrupt, however large its claim")
    func overclaimedCount() {
        // 200,000 entries claimed (2-byte references, all zero: the dictionary itself as key).
        let claimed = 200_000
        let dictionary = [0xDF, 0x12] + bigEndian(UInt64(claimed)).suffix(4) + [UInt8](repeating: 0, count: 4 * claimed)
        expectCorrupt(HandMadeBlob.make([dictionary], referenceSize: 2))
    }

    @Test("a dictionary shaped like a keyed archive is corrupt, at any level, and is not written")
    func keyedArchiveShape() throws {
        expectCorrupt(
            HandMadeBlob.make([
                [0xD2, 0x01, 0x02, 0x03, 0x04], ascii("$archiver"), ascii("$objects"), [0x09], [0xA0],
            ]))
        expectCorrupt(
            HandMadeBlob.make([
                [0xD1, 0x01, 0x02], ascii("k"),
                [0xD2, 0x03, 0x04, 0x05, 0x06], ascii("$archiver"), ascii("$objects"), [0x09], [0xA0],
            ]))
        #expect(
            try BinaryPropertyList.decode(
                HandMadeBlob.make([[0xD1, 0x01, 0x02], ascii("$archiver"), [0x09]]),
                limits: .default) == ["$archiver": true])
        let archiveShaped: PropertyListValue = ["$archiver": "x", "$objects": []]
        for entries in [["$archiver": "x", "$objects": []], ["k": [archiveShaped]]] as [[String: PropertyListValue]] {
            #expect(throws: SecureDictionaryError.self) { try BinaryPropertyList.encode(entries, limits: .default) }
        }
    }

    @Test("depth: 64 levels decode and encode, 65 do not")
    func depthLimit() throws {
        func nested(levels: Int) -> [String: PropertyListValue] {
            var value: PropertyListValue = []
            for level in 0..<(levels - 2) { value = level.isMultiple(of: 2) ? [value] : ["k": value] }
            return ["root": value]
        }
        let deepest = try BinaryPropertyList.encode(nested(levels: 64), limits: .default)
        #expect(try identical(BinaryPropertyList.decode(deepest, limits: .default), nested(levels: 64)))
        #expect(throws: SecureDictionaryError.invalidValue(reason: "containers nest deeper than the depth limit")) {
            try BinaryPropertyList.encode(nested(levels: 65), limits: .default)
        }
        let tooDeep = try BinaryPropertyList.encode(
            nested(levels: 65), limits: PropertyListLimits(maximumSize: 1 << 20, maximumDepth: 65))
        expectCorrupt(tooDeep)
        let shallow = PropertyListLimits(maximumSize: 1 << 20, maximumDepth: 1)
        #expect(
            try BinaryPropertyList.decode(Self.validBlob, limits: PropertyListLimits(maximumSize: 1 << 20, maximumDepth: 2)).count
                == 3)
        #expect(decodeError(Self.validBlob, limits: shallow) == .corrupt(reason: "containers nest deeper than the depth limit"))
    }

    @Test("10,000 nested arrays are rejected at the depth limit, without deep recursion")
    func veryDeep() {
        let levels = 10_000
        var objects: [[UInt8]] = [[0xD1, 0x00, 0x01, 0x00, 0x02], ascii("k")]
        for level in 0..<levels {
            let next = level + 3
            objects.append(level == levels - 1 ? [0xA0] : [0xA1, UInt8(next >> 8), UInt8(next & 0xFF)])
        }
        #expect(
            decodeError(HandMadeBlob.make(objects, referenceSize: 2))
                == .corrupt(reason: "containers nest deeper than the depth limit"))
    }

    @Test("a container referenced twice is corrupt: cycles, diamonds")
    func sharedContainers() {
        expectCorrupt(HandMadeBlob.make([[0xD1, 0x01, 0x02], ascii("k"), [0xA1, 0x02]]))  // array holds itself
        expectCorrupt(HandMadeBlob.make([[0xD1, 0x01, 0x00], ascii("k")]))  // root holds itself
        expectCorrupt(
            HandMadeBlob.make([[0xD2, 0x01, 0x02, 0x03, 0x03], ascii("a"), ascii("b"), [0xA0]]))  // diamond
    }

    @Test("the exponential-sharing plist is rejected, not expanded")
    func exponentialSharing() {
        // Object 2 is an empty array; object n + 1 is [n, n]: fully expanded, 2^30 arrays.
        var objects: [[UInt8]] = [[0xD1, 0x01, 0x20], ascii("k"), [0xA0]]
        for previous in 2..<32 { objects.append([0xA2, UInt8(previous), UInt8(previous)]) }
        let blob = HandMadeBlob.make(objects)
        let clock = ContinuousClock()
        let start = clock.now
        expectCorrupt(blob)
        // Not a timing goal (the benchmark has those): expanded, 2^30 arrays would take
        // minutes; the bound is loose so that a loaded machine never fails it.
        #expect(clock.now - start < .seconds(10))
    }

    @Test("trailer fields out of range are corrupt")
    func badTrailers() {
        let objects: [[UInt8]] = [[0xD1, 0x01, 0x02], ascii("k"), [0x09]]
        for count: UInt64 in [0, 4, 1_000_000, UInt64(Int32.max), .max, 1 << 62] {
            expectCorrupt(HandMadeBlob.make(objects, objectCount: count))
        }
        for top: UInt64 in [3, 1_000, .max] { expectCorrupt(HandMadeBlob.make(objects, top: top)) }
        for table: UInt64 in [0, 7, 8, 100, .max, .max - 20] { expectCorrupt(HandMadeBlob.make(objects, tableOffset: table)) }
        for size: UInt8 in [0, 3, 5, 16, 255] {
            expectCorrupt(HandMadeBlob.make(objects, referenceSize: size))
            expectCorrupt(HandMadeBlob.make(objects, offsetSize: size))
        }
        // A huge count with 8-byte offsets.
        expectCorrupt(HandMadeBlob.make(objects, offsetSize: 8, objectCount: 1 << 61))
        #expect(throws: Never.self) { try BinaryPropertyList.decode(HandMadeBlob.make(objects), limits: .default) }
    }

    @Test("object offsets and references out of range are corrupt")
    func badOffsets() {
        let objects: [[UInt8]] = [[0xD1, 0x01, 0x02], ascii("k"), [0x09]]
        var blob = HandMadeBlob.make(objects)
        let table = blob.count - 32 - 3
        for offset: UInt8 in [0, 7, UInt8(table), 0xFF] {
            blob[table + 2] = offset
            expectCorrupt(blob)
        }
        expectCorrupt(HandMadeBlob.make([[0xD1, 0x01, 0x03], ascii("k"), [0x09]]))  // reference past the count
        expectCorrupt(HandMadeBlob.make([[0xD1, 0x01], ascii("k"), [0x09]]))  // value reference is the key's byte
    }

    @Test(
        "huge counts in the length of strings, data and containers are corrupt",
        arguments: [
            [0x5F, 0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
            [0x5F, 0x13, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
            [0x6F, 0x13, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01],
            [0x4F, 0x12, 0x00, 0x01, 0x00, 0x00], [0x4F, 0x10, 0x30],
            [0xAF, 0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
            [0xDF, 0x13, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
            [0x5F, 0x14] + [UInt8](repeating: 0, count: 15) + [0x01], [0x5F, 0x23, 0, 0, 0, 0, 0, 0, 0, 0],
            [0x5F], [0x5F, 0x11, 0x00], [0x55, 0x61], [0x13, 0x01], [0x23, 0x00], [0x33],
        ] as [[UInt8]])
    func hugeCounts(_ object: [UInt8]) {
        expectCorrupt(HandMadeBlob.make([[0xD1, 0x01, 0x02], ascii("k"), object]))
    }

    @Test("size limit: maximumSize + 1 is too large before parsing; encode reports its size")
    func sizeLimit() throws {
        let limits = PropertyListLimits(maximumSize: Self.validBlob.count)
        #expect(try BinaryPropertyList.decode(Self.validBlob, limits: limits).count == 3)
        let garbage = [UInt8](repeating: 0xAB, count: Self.validBlob.count + 1)
        #expect(decodeError(garbage, limits: limits) == .tooLarge(size: garbage.count, limit: garbage.count - 1))
        let entries = try BinaryPropertyList.decode(Self.validBlob, limits: .default)
        let smaller = PropertyListLimits(maximumSize: Self.validBlob.count - 1)
        #expect(throws: SecureDictionaryError.tooLarge(size: Self.validBlob.count, limit: Self.validBlob.count - 1)) {
            try BinaryPropertyList.encode(entries, limits: smaller)
        }
    }

    @Test(
        "invalid text: unpaired surrogates and non-ASCII bytes in ASCII strings",
        arguments: [
            [0x61, 0xD8, 0x3D], [0x62, 0xD8, 0x3D, 0x00, 0x41], [0x61, 0xDE, 0x00], [0x62, 0xDE, 0x00, 0xD8, 0x3D],
            [0x51, 0x80], [0x53, 0x61, 0xC3, 0xA9],
        ] as [[UInt8]])
    func invalidText(_ object: [UInt8]) {
        expectCorrupt(HandMadeBlob.make([[0xD1, 0x01, 0x02], ascii("k"), object]))
        expectCorrupt(HandMadeBlob.make([[0xD1, 0x01, 0x02], object, [0x09]]))
    }

    @Test("a surrogate pair decodes")
    func surrogatePair() throws {
        let blob = HandMadeBlob.make([
            [0xD1, 0x01, 0x02], [0x62, 0xD8, 0x3D, 0xDE, 0x00], [0x63, 0x00, 0x41, 0xD8, 0x3D, 0xDE, 0x00],
        ])
        #expect(try BinaryPropertyList.decode(blob, limits: .default) == ["😀": "A😀"])
    }

    @Test("error descriptions never contain input bytes")
    func errorsDoNotLeak() throws {
        let canary = "CANARY-b7e1"
        let blobs: [[UInt8]] = [
            HandMadeBlob.make([[0xD2, 0x01, 0x01, 0x02, 0x02], ascii(canary), ascii(canary)]),  // duplicate key
            HandMadeBlob.make([[0xD1, 0x01, 0x02], ascii(canary), [0x5F, 0x10, 0x20] + Array(canary.utf8)]),  // bad length
            HandMadeBlob.make([[0xD1, 0x01, 0x02], ascii(canary), [0x5B] + Array(canary.utf8.dropLast()) + [0xC3]]),
            HandMadeBlob.make([[0xD1, 0x01, 0x02], ascii(canary), [0xC1, 0x01]]),  // set
            HandMadeBlob.make([[0xA1, 0x01], ascii(canary)]),  // root array
            Array("bplist\(canary)".utf8) + [UInt8](repeating: 0, count: 40),
        ]
        for blob in blobs {
            let error = try #require(decodeError(blob))
            for text in [String(describing: error), String(reflecting: error), error.localizedDescription] {
                #expect(!text.contains(canary))
                #expect(!text.contains("CANARY"))
            }
        }
    }
}

// MARK: - Mutation fuzzing

@Suite("Binary property list: mutation fuzzing")
struct BinaryPropertyListFuzzTests {
    static let canary = "CANARY-f00d"

    static func seeds() throws -> [[UInt8]] {
        let mixed: [String: PropertyListValue] = [
            "a": 1, "b": "héllo 😀", "c": [1, 2.5, true, .date(Date(timeIntervalSinceReferenceDate: 9))],
            "d": ["x": .data(Data([1, 2, 3])), "y": [[], [:], -7]], canary: .string(canary),
            "long": .string(String(repeating: "z", count: 40)), "n": .integer(Int.min),
        ]
        var wide: [String: PropertyListValue] = [:]
        for index in 0..<150 { wide["k\(index)"] = index.isMultiple(of: 3) ? .string("v\(index)") : .integer(index * 1000) }
        var deep: PropertyListValue = "bottom"
        for level in 0..<12 { deep = level.isMultiple(of: 2) ? [deep, .integer(level)] : ["k\(level)": deep] }
        let foundation = try PropertyListSerialization.data(
            fromPropertyList: PropertyListValue.dictionary(mixed).foundationObject, format: .binary, options: 0)
        return [
            try BinaryPropertyList.encode(mixed, limits: .default),
            try BinaryPropertyList.encode(wide, limits: .default),
            try BinaryPropertyList.encode(["deep": deep, "s": .string(canary)], limits: .default),
            [UInt8](foundation),
        ]
    }

    @Test("20,000 mutations: decode returns or throws, results re-encode to the same value, errors stay safe")
    func mutations() throws {
        let seeds = try Self.seeds()
        var generator = SplitMix64(seed: 0x5EED_B1157)
        var outcomes = (decoded: 0, rejected: 0)
        for _ in 0..<20_000 {
            var blob = seeds[Int.random(in: 0..<seeds.count, using: &generator)]
            for _ in 0..<Int.random(in: 1...4, using: &generator) { mutate(&blob, using: &generator) }
            check(blob, outcomes: &outcomes)
        }
        // Structured random: a valid header and trailer around random objects and offsets.
        for _ in 0..<5_000 {
            let body = (0..<Int.random(in: 1...60, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            let count = Int.random(in: 1...12, using: &generator)
            let table = (0..<count).map { _ in UInt8(8 + Int.random(in: 0..<body.count, using: &generator)) }
            var trailer = [UInt8](repeating: 0, count: 6) + [1, 1]
            trailer +=
                bigEndian(UInt64(count))
                + bigEndian(UInt64.random(in: 0..<UInt64(count), using: &generator))
            trailer += bigEndian(UInt64(8 + body.count))
            check(Array("bplist00".utf8) + body + table + trailer, outcomes: &outcomes)
        }
        #expect(outcomes.decoded > 100)
        #expect(outcomes.rejected > 10_000)
    }

    private func check(_ blob: [UInt8], outcomes: inout (decoded: Int, rejected: Int)) {
        do {
            let decoded = try BinaryPropertyList.decode(blob, limits: .default)
            outcomes.decoded += 1
            do {
                let again = try BinaryPropertyList.decode(
                    BinaryPropertyList.encode(decoded, limits: .default),
                    limits: .default)
                #expect(identical(again, decoded))
            } catch {
                Issue.record("a decoded value failed to round-trip: \(error)")
            }
        } catch {
            outcomes.rejected += 1
            let text = String(describing: error)
            if text.contains("CANARY") { Issue.record("an error description leaked input bytes") }
        }
    }

    private func mutate(_ blob: inout [UInt8], using generator: inout SplitMix64) {
        guard !blob.isEmpty else {
            blob = [UInt8(ascii: "b")]
            return
        }
        let position = Int.random(in: 0..<blob.count, using: &generator)
        let interesting: [UInt8] = [0x00, 0x01, 0x0F, 0x10, 0x13, 0x7F, 0x80, 0xA2, 0xD1, 0xFF]
        switch Int.random(in: 0..<7, using: &generator) {
        case 0:
            blob[position] ^= 1 << UInt8.random(in: 0...7, using: &generator)
        case 1:
            blob[position] = interesting[Int.random(in: 0..<interesting.count, using: &generator)]
        case 2:
            blob[position] = UInt8.random(in: 0...255, using: &generator)
        case 3:
            blob.removeLast(blob.count - position)
        case 4:
            let count = Int.random(in: 1...8, using: &generator)
            blob.insert(contentsOf: (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }, at: position)
        case 5:
            blob.removeSubrange(position..<min(blob.count, position + Int.random(in: 1...8, using: &generator)))
        default:
            // Aim at the trailer, where one byte changes every interpretation.
            let trailerPosition = max(0, blob.count - 1 - Int.random(in: 0..<32, using: &generator))
            blob[trailerPosition] = interesting[Int.random(in: 0..<interesting.count, using: &generator)]
        }
    }
}

// MARK: - Helpers

/// Values covering every type and the edges of every encoding.
private let edgeCaseValues: [PropertyListValue] = [
    "", "a", .string(String(repeating: "x", count: 14)), .string(String(repeating: "x", count: 15)),
    .string(String(repeating: "y", count: 70_000)), "a\u{0}b\u{0}", "\u{0}", "é", "日本語", "👍🏽 family: 👨‍👩‍👧",
    "\u{FEFF}bom", .string(String(repeating: "é", count: 300)), "e\u{301}",
    0, 1, 14, 15, 255, 256, 65_535, 65_536, .integer(Int(UInt32.max)), .integer(Int(UInt32.max) + 1),
    .integer(Int.max), .integer(Int.min), -1, -255,
    0.0, .real(-0.0), 0.1, -1.5, 1.0, .real(.infinity), .real(-.infinity), .real(.nan),
    .real(.leastNonzeroMagnitude), .real(.greatestFiniteMagnitude), .real(Double(Float.pi)),
    true, false,
    .date(Date(timeIntervalSinceReferenceDate: 0)), .date(Date(timeIntervalSinceReferenceDate: -1.5)),
    .date(.distantPast), .date(.distantFuture), .date(Date(timeIntervalSinceReferenceDate: 781_234_567.123_456_7)),
    .date(Date()),
    .data(Data()), .data(Data([0])), .data(Data(repeating: 0xAB, count: 15)),
    .data(Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0) })),
    [], [[]], [[:]], .array((0..<20).map { .integer($0) }), [1, "two", 3.0, true, [4]],
    [:], ["": ""], ["k": ["k": ["k": 1]]],
    .dictionary(Dictionary(uniqueKeysWithValues: (0..<20).map { ("k\($0)", .integer($0)) })),
]

private func roundTrip(_ entries: [String: PropertyListValue]) throws -> [String: PropertyListValue] {
    try BinaryPropertyList.decode(BinaryPropertyList.encode(entries, limits: .default), limits: .default)
}

/// Equality that compares reals and dates bit for bit (-0.0 is not 0.0, a NaN equals itself)
/// and strings byte for byte (`==` on `String` would equate "é" and "e\u{301}").
private func identical(_ lhs: PropertyListValue, _ rhs: PropertyListValue) -> Bool {
    switch (lhs, rhs) {
    case (.real(let left), .real(let right)):
        left.bitPattern == right.bitPattern
    case (.date(let left), .date(let right)):
        left.timeIntervalSinceReferenceDate.bitPattern == right.timeIntervalSinceReferenceDate.bitPattern
    case (.string(let left), .string(let right)):
        left.utf8.elementsEqual(right.utf8)
    case (.array(let left), .array(let right)):
        left.count == right.count && zip(left, right).allSatisfy { identical($0, $1) }
    case (.dictionary(let left), .dictionary(let right)):
        identical(left, right)
    default:
        lhs == rhs
    }
}

private func identical(_ lhs: [String: PropertyListValue], _ rhs: [String: PropertyListValue]) -> Bool {
    lhs.count == rhs.count && lhs.allSatisfy { key, value in rhs[key].map { identical(value, $0) } ?? false }
}

private func decodeError(_ bytes: [UInt8], limits: PropertyListLimits = .default) -> SecureDictionaryError? {
    do {
        _ = try BinaryPropertyList.decode(bytes, limits: limits)
        return nil
    } catch {
        return error
    }
}

private func expectCorrupt(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
    let error = decodeError(bytes)
    guard case .corrupt = error else {
        Issue.record("expected .corrupt, got \(error.map { "\($0)" } ?? "a decoded value")", sourceLocation: sourceLocation)
        return
    }
}

/// Shorter names for the blob builders of SecureDictionaryTestSupport, used on every line here.
private let ascii = HandMadeBlob.ascii
private let bigEndian = HandMadeBlob.bigEndian

private func ref8(_ index: UInt64) -> [UInt8] { bigEndian(index) }

/// The keys of the root dictionary in the order they were written (a minimal reader for
/// blobs we wrote ourselves).
private func writtenKeyOrder(_ blob: [UInt8]) -> [String] {
    let trailer = blob.count - 32
    let offsetSize = Int(blob[trailer + 6])
    let referenceSize = Int(blob[trailer + 7])
    func unsigned(_ start: Int, _ width: Int) -> Int { blob[start..<(start + width)].reduce(0) { $0 << 8 | Int($1) } }
    let table = unsigned(trailer + 24, 8)
    func offset(_ object: Int) -> Int { unsigned(table + object * offsetSize, offsetSize) }
    func countAndStart(_ offset: Int) -> (count: Int, start: Int) {
        let count = Int(blob[offset] & 0x0F)
        guard count == 0x0F else { return (count, offset + 1) }
        let width = 1 << Int(blob[offset + 1] & 0x0F)
        return (unsigned(offset + 2, width), offset + 2 + width)
    }
    let root = countAndStart(offset(unsigned(trailer + 16, 8)))
    return (0..<root.count).map { entry in
        let keyOffset = offset(unsigned(root.start + entry * referenceSize, referenceSize))
        let (count, start) = countAndStart(keyOffset)
        if blob[keyOffset] >> 4 == 0x5 { return String(decoding: blob[start..<(start + count)], as: UTF8.self) }
        let units = (0..<count).map { UInt16(blob[start + 2 * $0]) << 8 | UInt16(blob[start + 2 * $0 + 1]) }
        return String(decoding: units, as: UTF16.self)
    }
}

private func fromFoundation(_ object: Any) -> PropertyListValue? {
    if type(of: object) == Bool.self, let bool = object as? Bool { return .bool(bool) }
    if let string = object as? String { return .string(string) }
    if let data = object as? Data { return .data(data) }
    if let date = object as? Date { return .date(date) }
    if let array = object as? [Any] {
        let elements = array.compactMap(fromFoundation)
        return elements.count == array.count ? .array(elements) : nil
    }
    if let dictionary = object as? [String: Any] {
        let entries = dictionary.compactMapValues(fromFoundation)
        return entries.count == dictionary.count ? .dictionary(entries) : nil
    }
    if let number = object as? NSNumber {
        switch String(cString: number.objCType) {
        case "d", "f": return .real(number.doubleValue)
        case "c", "B": return .bool(number.boolValue)
        default: return .integer(number.intValue)
        }
    }
    return nil
}
