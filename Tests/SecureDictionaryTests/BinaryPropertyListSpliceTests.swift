import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

// The splice must give byte for byte what the full encode gives, or nothing.

@Suite("Binary property list: the one-key splice")
struct BinaryPropertyListSpliceTests {
    /// Entry counts around every width the layout has: the inline count (15), references of
    /// 1 and 2 bytes (256 objects: 127/128 entries), offsets of 1, 2 and 4 bytes.
    static let sizes = [0, 1, 2, 3, 13, 14, 15, 16, 17, 126, 127, 128, 129, 300, 2_000]

    @Test("every edit of a random dictionary splices to exactly the full encode", arguments: sizes)
    func matchesTheFullEncode(entries count: Int) throws {
        var generator = SplitMix64(seed: UInt64(count) &+ 0x5_1ACE)
        for round in 0..<6 {
            let entries = Self.randomEntries(count, round: round, &generator)
            let stored = try BinaryPropertyList.encode(entries, limits: .default)
            for edit in Self.edits(of: entries, &generator) {
                try Self.expectSpliceMatches(stored, entries, edit)
            }
        }
    }

    @Test("the reference width grows and shrinks at 32,768 entries (65,536 objects)")
    func referenceWidthBoundary() throws {
        var generator = SplitMix64(seed: 65_536)
        var entries = Self.randomEntries(32_767, round: 0, &generator)
        var stored = try BinaryPropertyList.encode(entries, limits: .default)
        try Self.expectSpliceMatches(stored, entries, KeyEdit(key: "zz-new", value: "v"))  // 65,537 objects
        entries["zz-new"] = "v"
        stored = try BinaryPropertyList.encode(entries, limits: .default)
        try Self.expectSpliceMatches(stored, entries, KeyEdit(key: "zz-new", value: nil))  // back to 65,535
    }

    @Test("with nested objects, a change of reference width gives nil; without, the splice makes it")
    func referenceWidthWithNestedObjects() throws {
        // 85 entries, each an array of one: 1 + 170 + 85 = 256 objects, numbered up to 255
        // (1-byte references). One more entry needs 2-byte references.
        let nested = Dictionary(uniqueKeysWithValues: (0..<85).map { ("k\($0)", PropertyListValue.array([1])) })
        let stored = try BinaryPropertyList.encode(nested, limits: .default)
        #expect(try BinaryPropertyListSplice.blob(editing: stored, key: "z", value: 1, limits: .default) == nil)
        #expect(try BinaryPropertyListSplice.blob(editing: stored, key: "k1", value: 1, limits: .default) != nil)
    }

    @Test("what it does not support gives nil, never a different blob")
    func fallsBack() throws {
        let flat: [String: PropertyListValue] = ["a": 1, "b": "two"]
        let stored = try BinaryPropertyList.encode(flat, limits: .default)
        func splice(_ blob: [UInt8], _ key: String, _ value: PropertyListValue?) throws -> [UInt8]? {
            try BinaryPropertyListSplice.blob(editing: blob, key: key, value: value, limits: .default)
        }
        #expect(try splice(stored, "é", 1) == nil)  // a key that is not ASCII
        #expect(try splice(stored, "$archiver", 1) == nil)  // may read as a keyed archive
        #expect(try splice(stored, "c", [1]) == nil)  // a container with elements
        #expect(try splice(stored, "c", ["k": 1]) == nil)
        let nestedNonASCII = try BinaryPropertyList.encode(["a": ["é": 1], "b": 2], limits: .default)
        #expect(try splice(nestedNonASCII, "b", 3) == nil)  // a nested key that is not ASCII
        let nonASCIIKey = try BinaryPropertyList.encode(["é": 1, "b": 2], limits: .default)
        #expect(try splice(nonASCIIKey, "b", 3) == nil)
        // Written by another program: a shared object (both values are object 3).
        var shared = try BinaryPropertyList.encode(["a": 1, "b": 1], limits: .default)
        shared = try Self.rewritingReference(shared, at: 4, to: 3)
        #expect(try BinaryPropertyList.decode(shared, limits: .default) == ["a": 1, "b": 1])
        #expect(try splice(shared, "c", 2) == nil)
        // Keys out of order: swap the two key objects' offsets.
        let unsorted = try Self.swappingOffsets(stored, 1, 2)
        #expect(try splice(unsorted, "c", 2) == nil)
        // An integer in a wider form than the writer's: 0x11 00 05 for 5.
        let wide: [UInt8] =
            Array("bplist00".utf8) + [0xD1, 0x01, 0x02, 0x51, 0x61, 0x11, 0x00, 0x05] + [8, 11, 13]
            + [0, 0, 0, 0, 0, 0, 1, 1] + Self.bigEndian(3) + Self.bigEndian(0) + Self.bigEndian(16)
        #expect(try BinaryPropertyList.decode(wide, limits: .default) == ["a": 5])
        #expect(try splice(wide, "b", 2) == nil)
        // A trailer whose unused bytes are not zero: a copy of it (removing an absent key)
        // would differ from the full encode (found by a second implementation's tests).
        var unusedByte = stored
        unusedByte[unusedByte.count - 32 + 5] = 1
        #expect(try BinaryPropertyList.decode(unusedByte, limits: .default) == flat)
        #expect(try splice(unusedByte, "absent", nil) == nil)
        #expect(try splice(unusedByte, "c", 2) == nil)
        // A nested dictionary that reads as a keyed archive, which the reader rejects: written
        // with "$objectz", then made "$objects".
        var archive = try BinaryPropertyList.encode(["a": ["$archiver": 1, "$objectz": 2], "b": 2], limits: .default)
        archive[try #require(archive.lastIndex(of: UInt8(ascii: "z")))] = UInt8(ascii: "s")
        #expect(throws: BinaryPropertyListError.self) { try BinaryPropertyList.decode(archive, limits: .default) }
        #expect(try splice(archive, "b", 3) == nil)
        #expect(try splice(Array("bplist00".utf8), "a", 1) == nil)
        #expect(try splice([], "a", 1) == nil)
    }

    @Test("it throws what the full encode throws")
    func throwsLikeTheFullEncode() throws {
        let stored = try BinaryPropertyList.encode(["a": "x"], limits: .default)
        let grown: [String: PropertyListValue] = ["a": "x", "b": .string(String(repeating: "y", count: 100))]
        let size = try BinaryPropertyList.encode(grown, limits: .default).count
        let limits = PropertyListLimits(maximumSize: size - 1)
        #expect(throws: BinaryPropertyListError.tooLarge(size: size, limit: size - 1)) {
            try BinaryPropertyListSplice.blob(editing: stored, key: "b", value: grown["b"], limits: limits)
        }
        #expect(throws: BinaryPropertyListError.tooLarge(size: size, limit: size - 1)) {
            try BinaryPropertyList.encode(grown, limits: limits)
        }
        let atTheLimit = PropertyListLimits(maximumSize: size)
        #expect(try BinaryPropertyListSplice.blob(editing: stored, key: "b", value: grown["b"], limits: atTheLimit) != nil)
        #expect(throws: BinaryPropertyListError.self) {
            try BinaryPropertyListSplice.blob(editing: stored, key: "b", value: .unsignedInteger(1), limits: .default)
        }
        // A stored blob over the limit is one the reader rejects: nil, so the full encode
        // judges (and throws for removing an absent key, which would give the same blob).
        let belowStored = PropertyListLimits(maximumSize: stored.count - 1)
        #expect(try BinaryPropertyListSplice.blob(editing: stored, key: "absent", value: nil, limits: belowStored) == nil)
        #expect(try BinaryPropertyListSplice.blob(editing: stored, key: "c", value: 1, limits: belowStored) == nil)
    }

    /// Hostile input: whatever the splice accepts must be in the writer's exact layout, so
    /// for a blob that decodes, its output is the full encode of the decoded, edited entries.
    @Test("bit flips and truncations of a stored blob: nil, or exactly the full encode")
    func hostileBlobs() throws {
        let entries: [String: PropertyListValue] = [
            "alpha": "one", "beta": 2, "gamma": .data(Data([1, 2, 3])), "delta": 4.5, "epsilon": true,
            "zeta": "ünï", "eta": .integer(-7), "theta": .integer(70_000), "iota": [], "kappa": [:],
            "lambda": ["x", 1, ["y": 2.5]], "mu": ["inner": [true, "deep"], "other": .data(Data([9]))],
        ]
        let stored = try BinaryPropertyList.encode(entries, limits: .default)
        var accepted = 0
        var candidates: [[UInt8]] = (0..<stored.count).map { Array(stored[..<$0]) }
        for index in stored.indices {
            for bit in [0, 1, 4, 7] {
                var flipped = stored
                flipped[index] ^= 1 << bit
                candidates.append(flipped)
            }
        }
        for blob in candidates {
            for edit in [KeyEdit(key: "beta", value: 3), KeyEdit(key: "aa", value: "new"), KeyEdit(key: "zeta", value: nil)] {
                guard
                    let spliced = try? BinaryPropertyListSplice.blob(
                        editing: blob, key: edit.key, value: edit.value, limits: .default)
                else { continue }
                accepted += 1
                // What the splice accepts, the reader decodes (the write path decodes another
                // writer's blob only after writing the splice).
                var decoded = try BinaryPropertyList.decode(blob, limits: .default)
                decoded[edit.key] = edit.value
                #expect(spliced == (try BinaryPropertyList.encode(decoded, limits: .default)))
            }
        }
        #expect(accepted >= 3)  // the original (a 0-length truncation is not it) and harmless flips
    }

    // MARK: Helpers

    static func expectSpliceMatches(
        _ stored: [UInt8], _ entries: [String: PropertyListValue], _ edit: KeyEdit,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        var edited = entries
        edited[edit.key] = edit.value
        let spliced = try BinaryPropertyListSplice.blob(editing: stored, key: edit.key, value: edit.value, limits: .default)
        switch edit.value {
        case .array(let elements) where !elements.isEmpty:
            #expect(spliced == nil, sourceLocation: sourceLocation)  // the full encode's job
            return
        case .dictionary(let entries) where !entries.isEmpty:
            #expect(spliced == nil, sourceLocation: sourceLocation)
            return
        default: break
        }
        let expected = try BinaryPropertyList.encode(edited, limits: .default)
        // Nested containers are copied as they are: a change of reference width gives nil.
        if spliced == nil, expected[expected.count - 25] != stored[stored.count - 25],
            expected.count > 8 + 2 * edited.count + 40
        {
            return
        }
        #expect(spliced == expected, "\(entries.count) entries, key \(edit.key)", sourceLocation: sourceLocation)
        if let spliced {
            #expect(try BinaryPropertyList.decode(spliced, limits: .default) == edited, sourceLocation: sourceLocation)
        }
    }

    /// Keys that share prefixes and are prefixes of each other; every scalar kind as values.
    static func randomEntries(_ count: Int, round: Int, _ generator: inout SplitMix64) -> [String: PropertyListValue] {
        var entries: [String: PropertyListValue] = [:]
        let prefixes = ["", "com.example.", "com.example.app.", "k"]
        while entries.count < count {
            let prefix = prefixes[Int.random(in: 0..<prefixes.count, using: &generator)]
            let key = prefix + String(Int.random(in: 0..<(count * 4 + 10), using: &generator), radix: 36)
            entries[key] = randomValue(&generator)
        }
        return entries
    }

    /// Every scalar kind, and (above depth 0) arrays and dictionaries of them, nested.
    static func randomValue(_ generator: inout SplitMix64, depth: Int = 2) -> PropertyListValue {
        switch Int.random(in: 0..<(depth > 0 ? 16 : 14), using: &generator) {
        case 0: .string(String(repeating: "s", count: Int.random(in: 0..<40, using: &generator)))
        case 1: .string("ünïcode \(Int.random(in: 0..<100, using: &generator)) 👍")
        case 2: .data(Data(repeating: 7, count: [0, 1, 14, 15, 300][Int.random(in: 0..<5, using: &generator)]))
        case 3: .integer(Int.random(in: 0..<256, using: &generator))
        case 4: .integer(Int.random(in: 256..<70_000, using: &generator))
        case 5: .integer(Int.random(in: 70_000..<Int(UInt32.max) + 10, using: &generator))
        case 6: .integer(Int.random(in: Int.min..<0, using: &generator))
        case 7: .integer(Int.random(in: Int(UInt32.max)..<Int.max, using: &generator))
        case 8: .real(Double.random(in: -1e9..<1e9, using: &generator))
        case 9: .date(Date(timeIntervalSinceReferenceDate: Double.random(in: -1e9..<1e9, using: &generator)))
        case 10: .bool(Bool.random(using: &generator))
        case 11: .unsignedInteger(UInt64.random(in: UInt64(Int.max) + 1...UInt64.max, using: &generator))
        case 12: []
        case 13: [:]
        case 14: .array((0..<Int.random(in: 1..<4, using: &generator)).map { _ in randomValue(&generator, depth: depth - 1) })
        default:
            .dictionary(
                Dictionary(
                    (0..<Int.random(in: 1..<4, using: &generator)).map { index in
                        ("n\(index)", randomValue(&generator, depth: depth - 1))
                    }, uniquingKeysWith: { first, _ in first }))
        }
    }

    /// Inserts before the first, in the middle and after the last key; replaces with a
    /// longer, a shorter and the same value; removes the first, a middle, the last and an
    /// absent key.
    static func edits(of entries: [String: PropertyListValue], _ generator: inout SplitMix64) -> [KeyEdit] {
        let keys = entries.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        var edits = [
            KeyEdit(key: "", value: "first"), KeyEdit(key: "~~~", value: .integer(300)),
            KeyEdit(key: "com.example.m", value: .data(Data(count: 20))), KeyEdit(key: "absent", value: nil),
        ]
        for key in [keys.first, keys.last, keys.isEmpty ? nil : keys[keys.count / 2]].compactMap({ $0 }) {
            edits += [
                KeyEdit(key: key, value: .string(String(repeating: "L", count: 50))), KeyEdit(key: key, value: true),
                KeyEdit(key: key, value: entries[key]), KeyEdit(key: key, value: nil),
                KeyEdit(key: key + "0", value: randomValue(&generator)),
            ]
        }
        return edits
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * (7 - $0))) }
    }

    /// The blob with the reference at `index` (1-byte references) of the root set to `object`.
    static func rewritingReference(_ blob: [UInt8], at index: Int, to object: UInt8) throws -> [UInt8] {
        var blob = blob
        blob[8 + 1 + index - 1] = object
        return blob
    }

    /// The blob with the offset table entries of objects `a` and `b` (1-byte offsets) swapped.
    static func swappingOffsets(_ blob: [UInt8], _ a: Int, _ b: Int) throws -> [UInt8] {
        var blob = blob
        let table = Int(blob[(blob.count - 8)...].reduce(0) { $0 << 8 | UInt64($1) })
        blob.swapAt(table + a, table + b)
        return blob
    }
}
