#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Decodes one binary property list that may have been written by an attacker.
///
/// Rules, each with its reason:
/// 1. The trailer is validated with overflow-checked arithmetic before any object is read,
///    and every later read is checked against the bounds it implies; no input can trap.
///    Objects must lie in `[8, offsetTableOffset)`, as every writer lays them out.
/// 2. A container (array or dictionary) may be referenced once in the whole tree; a second
///    reference is corrupt. That rules out cycles and exponential expansion, so the work done
///    is bounded by the size of the input. Scalars may be shared (Apple's and Python's writers
///    unique them): one used twice is cached by object number, so each is decoded at most
///    twice however often it is shared.
/// 3. Containers deeper than the depth limit are rejected before their contents are read, so
///    recursion never goes deeper than the limit.
/// 4. Only the types a ``PropertyListValue`` can hold are accepted: null, fill, UIDs, sets,
///    non-string keys, duplicate keys and keyed archives (`$archiver` with `$objects`) are
///    corrupt. Error reasons are fixed texts: they never quote the input.
struct BinaryPropertyListReader: ~Copyable {
    /// Start of the blob; valid for the reader's lifetime (the caller's buffer).
    let base: UnsafeRawPointer
    /// Offset of the offset table, which is also where the object area ends.
    let objectsEnd: Int
    let offsetIntSize: Int
    let objectRefSize: Int
    let objectCount: Int
    let topObject: Int
    let maximumDepth: Int
    /// Per object: `unseen`, `containerSeen`, `scalarSeen`, or the index of its decoded value
    /// in `scalars`. A scalar is cached on its second use only: most are used once. Owned by
    /// the reader (which is why it is not copyable) and freed in `deinit`; it holds no input
    /// bytes.
    private let states: UnsafeMutablePointer<Int32>
    private var scalars: [PropertyListValue] = []
    /// Element slots containers may still reserve before reading their elements, for the
    /// whole decode: a count read from the input is only a claim. See ``reservation(for:)``.
    private var reservationBudget: Int

    private static let unseen: Int32 = -1
    private static let containerSeen: Int32 = -2
    private static let scalarSeen: Int32 = -3
    static let headerSize = 8
    private static let trailerSize = 32
    /// The reservation budget of a small blob; a larger one gets one slot per
    /// `bytesPerReservedSlot` bytes of object area (a 4 MiB blob: 262,144 slots in all).
    private static let minimumReservationBudget = 4096
    private static let bytesPerReservedSlot = 16

    /// Validates the header and the trailer.
    init(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int) throws(BinaryPropertyListError) {
        let size = bytes.count
        guard size >= Self.headerSize, let base = bytes.baseAddress else {
            throw .corrupt(reason: "shorter than a binary property list header")
        }
        guard bytes.prefix(6).elementsEqual("bplist".utf8) else {
            throw .corrupt(reason: "not a binary property list")
        }
        guard bytes[6] == UInt8(ascii: "0"), bytes[7] == UInt8(ascii: "0") else {
            let printable = [bytes[6], bytes[7]].map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }
            throw .unsupportedVersion(String(decoding: printable, as: UTF8.self))
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
        self.maximumDepth = maximumDepth
        self.reservationBudget = Swift.max(Self.minimumReservationBudget, Int(tableOffset) / Self.bytesPerReservedSlot)
        self.states = .allocate(capacity: Int(objectCount))
        self.states.initialize(repeating: Self.unseen, count: Int(objectCount))
    }

    deinit {
        states.deallocate()
    }

    /// Decodes the whole tree; the top object must be a dictionary.
    mutating func decodeRoot() throws(BinaryPropertyListError) -> [String: PropertyListValue] {
        let offset = try objectOffset(topObject)
        guard byte(at: offset) & 0xF0 == 0xD0 else {
            throw .corrupt(reason: "root object is not a dictionary")
        }
        guard case .dictionary(let entries) = try value(at: topObject, depth: 1) else {
            throw .corrupt(reason: "root object is not a dictionary")
        }
        return entries
    }

    // MARK: Objects

    /// The value of object `index`, a container at nesting level `depth` if it is one.
    ///
    /// The common case, a scalar used once, is read here, inlined in the containers' loops;
    /// ``sharedOrContainerValue(at:depth:)`` reads the others.
    @inline(__always)
    private mutating func value(at index: Int, depth: Int) throws(BinaryPropertyListError) -> PropertyListValue {
        if states[index] == Self.unseen {
            let offset = try objectOffset(index)
            let marker = byte(at: offset)
            let type = marker & 0xF0
            if type != 0xA0, type != 0xD0 {
                let scalar = try scalar(marker: marker, offset: offset)
                states[index] = Self.scalarSeen
                return scalar
            }
        }
        return try sharedOrContainerValue(at: index, depth: depth)
    }

    /// ``value(at:depth:)`` for a container, and for a scalar seen before.
    @inline(never)
    private mutating func sharedOrContainerValue(
        at index: Int, depth: Int
    ) throws(BinaryPropertyListError) -> PropertyListValue {
        let state = states[index]
        if state >= 0 { return scalars[Int(state)] }
        guard state != Self.containerSeen else {
            throw .corrupt(reason: "a container is referenced more than once")
        }
        let offset = try objectOffset(index)
        let marker = byte(at: offset)
        switch marker & 0xF0 {
        case 0xA0:
            states[index] = Self.containerSeen
            return .array(try array(marker: marker, offset: offset, depth: depth))
        case 0xD0:
            states[index] = Self.containerSeen
            return .dictionary(try dictionary(marker: marker, offset: offset, depth: depth))
        default:
            let scalar = try scalar(marker: marker, offset: offset)
            remember(scalar, for: index, state: state)
            return scalar
        }
    }

    /// The string of object `index`, which must be a string: it is a dictionary key.
    /// `startsWithDollar` tells whether its first character is "$" (keyed archives' keys are).
    @inline(__always)
    private mutating func key(at index: Int) throws(BinaryPropertyListError) -> (key: String, startsWithDollar: Bool) {
        if let key = try unseenShortKey(at: index) { return key }
        let key = try anyKey(at: index, state: states[index])
        return (key, key.utf8.first == UInt8(ascii: "$"))
    }

    /// The common key, a short ASCII string used once; `nil` for any other object.
    @inline(__always)
    private func unseenShortKey(at index: Int) throws(BinaryPropertyListError) -> (key: String, startsWithDollar: Bool)? {
        guard states[index] == Self.unseen else { return nil }
        let offset = try objectOffset(index)
        let marker = byte(at: offset)
        guard marker & 0xF0 == 0x50, marker != 0x5F else { return nil }
        let count = Int(marker & 0x0F)
        try requireBytes(count, at: offset + 1)
        let key = try shortASCIIString(count: count, at: offset + 1)
        states[index] = Self.scalarSeen
        return (key, count > 0 && byte(at: offset + 1) == UInt8(ascii: "$"))
    }

    /// ``key(at:)`` for every other case: a shared key, a long or UTF-16 one, or not a string.
    private mutating func anyKey(at index: Int, state: Int32) throws(BinaryPropertyListError) -> String {
        if state >= 0, case .string(let key) = scalars[Int(state)] { return key }
        guard state == Self.unseen || state == Self.scalarSeen else {
            throw .corrupt(reason: "dictionary key is not a string")
        }
        let offset = try objectOffset(index)
        let marker = byte(at: offset)
        let key: String
        switch marker & 0xF0 {
        case 0x50: key = try asciiString(marker: marker, offset: offset)
        case 0x60: key = try utf16String(marker: marker, offset: offset)
        default: throw .corrupt(reason: "dictionary key is not a string")
        }
        remember(.string(key), for: index, state: state)
        return key
    }

    /// Marks a scalar as seen on its first use, and caches it on its second (only then is
    /// `scalar` evaluated: a key need not be wrapped in a value that is thrown away).
    private mutating func remember(_ scalar: @autoclosure () -> PropertyListValue, for index: Int, state: Int32) {
        if state == Self.unseen {
            states[index] = Self.scalarSeen
        } else {
            states[index] = Int32(truncatingIfNeeded: scalars.count)
            scalars.append(scalar())
        }
    }

    private mutating func array(
        marker: UInt8, offset: Int, depth: Int
    ) throws(BinaryPropertyListError) -> [PropertyListValue] {
        guard depth <= maximumDepth else {
            throw .corrupt(reason: "containers nest deeper than the depth limit")
        }
        let (count, start) = try countAndStart(marker: marker, offset: offset, unitSize: objectRefSize)
        var elements: [PropertyListValue] = []
        elements.reserveCapacity(reservation(for: count))
        var position = start
        for _ in 0..<count {
            let element = try reference(at: position)
            position += objectRefSize
            elements.append(try value(at: element, depth: depth + 1))
        }
        return elements
    }

    private mutating func dictionary(
        marker: UInt8, offset: Int, depth: Int
    ) throws(BinaryPropertyListError) -> [String: PropertyListValue] {
        guard depth <= maximumDepth else {
            throw .corrupt(reason: "containers nest deeper than the depth limit")
        }
        let (count, start) = try countAndStart(marker: marker, offset: offset, unitSize: 2 * objectRefSize)
        var entries = [String: PropertyListValue](minimumCapacity: reservation(for: count))
        let valuesStart = start + count * objectRefSize
        var hasDollarKey = false
        for entry in 0..<count {
            let (key, startsWithDollar) = try key(at: reference(at: start + entry * objectRefSize))
            hasDollarKey = hasDollarKey || startsWithDollar
            entries[key] = try value(at: reference(at: valuesStart + entry * objectRefSize), depth: depth + 1)
            guard entries.count == entry + 1 else {
                throw try duplicateKey(entry: entry, keysStart: start, depth: depth)
            }
        }
        if hasDollarKey, entries["$archiver"] != nil, entries["$objects"] != nil {
            throw .corrupt(reason: "keyed archives are not supported")
        }
        return entries
    }

    /// The error for entry `entry` of the dictionary whose key references start at `keysStart`,
    /// whose key equals an earlier one (its key is read again: it was moved into the result).
    /// Two keys Swift holds equal: the same bytes, or canonically equivalent (é as U+00E9 and
    /// as e + U+0301). Keeping one would drop the other's value.
    private mutating func duplicateKey(
        entry: Int, keysStart: Int, depth: Int
    ) throws(BinaryPropertyListError) -> BinaryPropertyListError {
        let key = try self.key(at: reference(at: keysStart + entry * objectRefSize)).key
        var earlier = 0
        for index in 0..<entry where try self.key(at: reference(at: keysStart + index * objectRefSize)).key == key {
            earlier = index
            break
        }
        return .corrupt(
            reason: "duplicate key: entries \(earlier + 1) and \(entry + 1) of a dictionary at depth \(depth) "
                + "have keys that Swift treats as equal (the same text, or canonically equivalent Unicode)")
    }

    /// The capacity to reserve for a container that claims `count` elements, taken from the
    /// budget. Reserving the whole count spares a large dictionary its rehashing as it grows;
    /// the budget bounds what a blob that lies about its counts makes us allocate, in all,
    /// to a small multiple of its size. Once it is spent, containers grow as they are read.
    private mutating func reservation(for count: Int) -> Int {
        let slots = Swift.min(count, reservationBudget)
        reservationBudget -= slots
        return slots
    }
}
