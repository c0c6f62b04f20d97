import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

/// What the library keeps of a dictionary is a `Generation`, the stored blob in a
/// region of its own. Its writer copies stored entries from region to region and encodes only
/// new values; these tests hold it to the full encode of the same values, byte for byte.
@Suite("Generations: the stored blob, kept in the library's own memory")
struct GenerationTests {
    static let limits = PropertyListLimits.default

    @Test("a write onto a stored generation is byte for byte the full encode", arguments: [0, 1, 2, 15, 16, 300, 3_000])
    func writingGivesTheFullEncode(size: Int) throws {
        var generator = SplitMix64(seed: UInt64(size) &+ 37)
        for _ in 0..<(size > 1000 ? 4 : 40) {
            let entries = Self.randomEntries(size, &generator)
            let base = try Self.generation(of: BinaryPropertyList.encode(entries, limits: Self.limits))
            let (overlay, expected) = Self.randomOverlay(on: entries, &generator)
            let written = try Generation.writing(overlay, onto: base, limits: Self.limits)
            #expect(Array(written.bytes) == (try BinaryPropertyList.encode(expected, limits: Self.limits)))
            #expect(written.count == expected.count)
            #expect(written.census == (try Self.generation(of: Array(written.bytes)).census))
        }
    }

    @Test("onto a blob Foundation wrote (unsorted keys, shared objects), a write is the full encode of its values")
    func writingOntoAForeignBlob() throws {
        var generator = SplitMix64(seed: 5)
        for size in [1, 7, 40, 400] {
            let entries = Self.randomEntries(size, &generator, foundationSafe: true)
            let foreign = try PropertyListSerialization.data(
                fromPropertyList: PropertyListValue.dictionary(entries).foundationObject, format: .binary, options: 0)
            let base = try Self.generation(of: Array(foreign))
            #expect(base.count == entries.count)
            let stored = try BinaryPropertyList.decode(Array(foreign), limits: Self.limits)  // what Foundation wrote
            let (overlay, expected) = Self.randomOverlay(on: stored, &generator)
            let written = try Generation.writing(overlay, onto: base, limits: Self.limits)
            #expect(Array(written.bytes) == (try BinaryPropertyList.encode(expected, limits: Self.limits)))
            // Nothing changed: the blob comes out in this writer's form all the same.
            let normalized = try Generation.writing(Overlay(), onto: base, limits: Self.limits)
            #expect(Array(normalized.bytes) == (try BinaryPropertyList.encode(stored, limits: Self.limits)))
        }
        // Python's 16-byte integers and UTF-16 keys, written back in this writer's form.
        let python = try Self.generation(of: PlainValuesTests.pythonUnsignedIntegers)
        let again = try Generation.writing(Overlay(), onto: python, limits: Self.limits)
        #expect(Array(again.bytes) == (try BinaryPropertyList.encode(python.dictionary(), limits: Self.limits)))
    }

    @Test("reads give what decoding the blob gives; missing keys give nil")
    func readsMatchTheDecode() throws {
        var generator = SplitMix64(seed: 11)
        let entries = Self.randomEntries(500, &generator)
        let generation = try Self.generation(of: BinaryPropertyList.encode(entries, limits: Self.limits))
        #expect(generation.count == entries.count)
        #expect(generation.dictionary() == entries)
        #expect(Set(generation.keys) == Set(entries.keys))
        for (key, value) in entries {
            #expect(generation.value(forKey: key) == value)
            #expect(generation.holds(key, identicalTo: value))
        }
        for absent in ["absent", "k-1", "", "\u{E9}x"] where entries[absent] == nil {
            #expect(generation.value(forKey: absent) == nil)
            #expect(generation.holds(absent, identicalTo: nil))
        }
    }

    @Test("values compare as change events tell them apart: bits of reals, scalars of strings")
    func identityIsByStoredBits() throws {
        let generation = try Self.generation(
            of: BinaryPropertyList.encode(
                ["nan": .real(.nan), "zero": .real(0.0), "name": "e\u{301}", "one": 1, "list": ["a", 1.5]], limits: Self.limits))
        #expect(generation.holds("nan", identicalTo: .real(.nan)))
        #expect(!generation.holds("zero", identicalTo: .real(-0.0)))
        #expect(!generation.holds("name", identicalTo: "\u{E9}"))
        #expect(!generation.holds("one", identicalTo: .real(1)))
        #expect(!generation.holds("one", identicalTo: true))
        #expect(generation.holds("list", identicalTo: ["a", 1.5]))
        #expect(!generation.holds("list", identicalTo: ["a", 1.5, 2]))
        // A value the writer refuses is held nowhere (it is written before it is compared).
        #expect(!generation.holds("one", identicalTo: .unsignedInteger(1)))
        #expect(!generation.holds("list", identicalTo: ["$archiver": 1, "$objects": 2]))
    }

    @Test("the changes between two generations are the per-key differences, in key order")
    func changesBetweenGenerations() throws {
        let old = try Self.generation(
            of: BinaryPropertyList.encode(["a": 1, "b": "x", "c": .real(.nan), "d": ["k": 1]], limits: Self.limits))
        var overlay = Overlay()
        overlay.set("a", to: nil)
        overlay.set("b", to: "y")
        overlay.set("c", to: .real(.nan))
        overlay.set("e", to: true)
        let new = try Generation.writing(overlay, onto: old, limits: Self.limits)
        let changes = new.changes(since: old)
        #expect(changes.map(\.key) == ["a", "b", "e"])
        #expect(changes.map(\.kind) == [.removed, .updated, .inserted])
        #expect(changes[0].oldValue == 1 && changes[1].oldValue == "x" && changes[1].newValue == "y")
        #expect(new.changes(since: new).isEmpty)
    }

    @Test("the merge walk of both visits each key of two sorted lists once, in order, and stops at a throw")
    func sortedMergeVisitsEachKeyOnce() throws {
        var generator = SplitMix64(seed: 44)
        for _ in 0..<200 {
            let (left, right) = (Self.sortedKeys(&generator), Self.sortedKeys(&generator))
            var merge = SortedMerge(leftCount: left.count, rightCount: right.count)
            var visited: [Int] = []
            while let step = merge.next(comparing: { left[$0] - right[$1] }) {
                switch step {
                case (let before?, nil): visited.append(left[before])
                case (nil, let after?): visited.append(right[after])
                case (let before?, let after?):
                    #expect(left[before] == right[after])
                    visited.append(left[before])
                case (nil, nil): Issue.record("a step with neither list's position")
                }
            }
            #expect(visited == Set(left + right).sorted())
        }
        struct Stop: Error {}
        var merge = SortedMerge(leftCount: 2, rightCount: 2)
        #expect(throws: Stop.self) { try merge.next(comparing: { (_, _) throws(Stop) in throw Stop() }) }
    }

    /// Up to 12 distinct numbers below 20, sorted.
    static func sortedKeys(_ generator: inout SplitMix64) -> [Int] {
        Set((0..<Int.random(in: 0...12, using: &generator)).map { _ in Int.random(in: 0..<20, using: &generator) }).sorted()
    }

    @Test("a write over the size limit, or of a keyed archive's shape across stored and new keys, is refused")
    func refusedWrites() throws {
        let base = try Self.generation(of: BinaryPropertyList.encode(["$archiver": "x"], limits: Self.limits))
        var overlay = Overlay()
        overlay.set("$objects", to: [])
        #expect(throws: SecureDictionaryError.self) { try Generation.writing(overlay, onto: base, limits: Self.limits) }
        // The same with the stored "$archiver" written as UTF-16, as another program may.
        let utf16Key: [UInt8] = [0x69] + "$archiver".utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        let foreign = try Self.generation(of: HandMadeBlob.make([[0xD1, 0x01, 0x02], utf16Key, HandMadeBlob.ascii("x")]))
        #expect(throws: SecureDictionaryError.self) { try Generation.writing(overlay, onto: foreign, limits: Self.limits) }
        var large = Overlay()
        large.set("big", to: .data(Data(count: 2_000)))
        let size = try BinaryPropertyList.encode(["$archiver": "x", "big": .data(Data(count: 2_000))], limits: Self.limits).count
        #expect(throws: SecureDictionaryError.tooLarge(size: size, limit: 1_000)) {
            try Generation.writing(large, onto: base, limits: PropertyListLimits(maximumSize: 1_000))
        }
    }

    @Test("a Hasher gives the same value for the same bytes however they are split (keys rely on it)")
    func hashingIsSplitIndependent() {
        let bytes = Array("a key with non-ASCII text: é, 日本, 👍, and more than sixty-four bytes in all".utf8)
        let whole = bytes.withUnsafeBytes { buffer in
            var hasher = Hasher()
            hasher.combine(bytes: buffer)
            return hasher.finalize()
        }
        for split in [1, 3, 7, 8, 13, 64] {
            var hasher = Hasher()
            var start = 0
            while start < bytes.count {
                let end = min(bytes.count, start + split)
                bytes[start..<end].withUnsafeBytes { hasher.combine(bytes: $0) }
                start = end
            }
            #expect(hasher.finalize() == whole, "split every \(split) bytes")
        }
        // And a stored UTF-16 key hashes as the same text in a String.
        let key = "日本 é 👍"
        let units = Array(key.utf16).flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        units.withUnsafeBytes { buffer in
            let stored = StoredString(start: buffer.baseAddress!, count: key.utf16.count, isUTF16: true)
            #expect(stored.hashValue == StoredString.hashValue(key))
            #expect(stored.compare(to: key) == 0 && stored.string() == key)
        }
    }

    @Test("a generation's pages are its own, locked and out of core dumps (the kernel's own view of them)")
    func regionsAreLockedAndNotDumped() throws {
        guard SecureMemory.status.memoryLockLimit.map({ $0 >= 4 << 20 }) ?? true else { return }  // a tight ulimit -l
        let entries = Dictionary(uniqueKeysWithValues: (0..<2_000).map { ("k\($0)", PropertyListValue.integer($0)) })
        let generation = try Self.generation(of: BinaryPropertyList.encode(entries, limits: Self.limits))
        let start = UInt(bitPattern: generation.region.base)
        #expect(start % UInt(SecureMemory.pageSize) == 0)
        let mapping = try #require(Self.mapping(containing: start), "no mapping holds the region")
        #expect(mapping.flags.contains("lo") && mapping.flags.contains("dd"), "VmFlags: \(mapping.flags)")
        #expect(mapping.lockedKilobytes * 1024 >= generation.region.mappedCount)
        withExtendedLifetime(generation) {}
    }

    // MARK: Helpers

    static func generation(of bytes: [UInt8]) throws -> Generation {
        try bytes.withUnsafeBytes { try Generation(copying: $0, limits: limits) }
    }

    /// The mapping of this process that holds `address`, as /proc/self/smaps tells: its
    /// VmFlags ("lo": locked, "dd": not dumped) and its locked KiB.
    static func mapping(containing address: UInt) -> (flags: [Substring], lockedKilobytes: Int)? {
        let handle = FileHandle(forReadingAtPath: "/proc/self/smaps")
        let smaps = String(decoding: handle?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        var inside = false
        var locked = 0
        for line in smaps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let range = fields.first, range.contains("-"), !range.hasSuffix(":") {
                let bounds = range.split(separator: "-").compactMap { UInt($0, radix: 16) }
                inside = bounds.count == 2 && bounds[0] <= address && address < bounds[1]
            } else if inside, fields.first == "Locked:" {
                locked = Int(fields[1]) ?? 0
            } else if inside, fields.first == "VmFlags:" {
                return (Array(fields.dropFirst()), locked)
            }
        }
        return nil
    }

    /// Keys no two of which are canonically equivalent (a Swift dictionary of the expected
    /// values must hold them apart), in several scripts.
    static let keyPool = ["", "a", "A", "$x", "é", "日本", "👍", "a\u{0}b", "zz", "~", "k\u{7F}"]

    static func randomKey(_ generator: inout SplitMix64) -> String {
        generator.next() % 4 == 0
            ? keyPool[Int(generator.next() % UInt64(keyPool.count))] : "k\(generator.next() % 5_000)"
    }

    static func randomEntries(
        _ count: Int, _ generator: inout SplitMix64, depth: Int = 2, foundationSafe: Bool = false
    ) -> [String: PropertyListValue] {
        var entries: [String: PropertyListValue] = [:]
        while entries.count < count {
            entries[randomKey(&generator)] = randomValue(&generator, depth: depth, foundationSafe: foundationSafe)
        }
        return entries
    }

    static func randomValue(_ generator: inout SplitMix64, depth: Int, foundationSafe: Bool = false) -> PropertyListValue {
        switch generator.next() % (depth < 4 ? 12 : 10) {
        case 0: return .string("s\(generator.next() % 100)")
        case 1: return .string(String(repeating: "é日", count: Int(generator.next() % 20)))
        case 2: return .integer(Int(truncatingIfNeeded: generator.next()) >> Int(generator.next() % 64))
        case 3:
            return foundationSafe
                ? .integer(Int(generator.next() % 1_000)) : .unsignedInteger(UInt64.max - generator.next() % 100)
        case 4: return .real(Double(bitPattern: generator.next()).isNaN ? 0.5 : Double(bitPattern: generator.next() >> 2))
        case 5: return .bool(generator.next() % 2 == 0)
        case 6: return .date(Date(timeIntervalSinceReferenceDate: Double(generator.next() % 1_000_000_000)))
        case 7: return .data(Data((0..<(generator.next() % 40)).map { UInt8(truncatingIfNeeded: $0) }))
        case 8: return .string(String(repeating: "x", count: Int(generator.next() % 40)))
        case 9: return .integer(Int(generator.next() % 70_000))
        case 10:
            return .array(
                (0..<(generator.next() % 5)).map { _ in randomValue(&generator, depth: depth + 1, foundationSafe: foundationSafe)
                })
        default:
            return .dictionary(
                randomEntries(Int(generator.next() % 5), &generator, depth: depth + 1, foundationSafe: foundationSafe))
        }
    }

    /// Random changes to `entries` (sets, removals of present and absent keys, now and then
    /// everything removed first) and the entries they give.
    static func randomOverlay(
        on entries: [String: PropertyListValue], _ generator: inout SplitMix64
    ) -> (Overlay, [String: PropertyListValue]) {
        var overlay = Overlay()
        var expected = entries
        if generator.next() % 8 == 0 {
            overlay.removeAll()
            expected.removeAll()
        }
        let keys = Array(entries.keys)
        for _ in 0..<(generator.next() % 6) {
            let key =
                !keys.isEmpty && generator.next() % 2 == 0
                ? keys[Int(generator.next() % UInt64(keys.count))] : randomKey(&generator)
            let value: PropertyListValue? = generator.next() % 3 == 0 ? nil : randomValue(&generator, depth: 2)
            overlay.set(key, to: value)
            expected[key] = value
        }
        return (overlay, expected)
    }
}
