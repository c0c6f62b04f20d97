import Glibc

/// One string object of a blob, read in place: its code units, ASCII (one byte each, 0x5n) or
/// UTF-16 big-endian (0x6n), already checked (bytes below 0x80, surrogates paired).
///
/// ```swift
/// let key = try view.string(index)             // no copy of the text
/// if key.compare(to: "apiToken") == 0 { … }   // by Unicode scalars
/// let copy = key.string()                      // the caller's copy, when one is asked for
/// ```
///
/// Keys match **by their Unicode scalars**, as the stored plist, the Secret Service and Python's
/// `plistlib` tell them apart (`é` as U+00E9 is not `e` + U+0301, which Swift's `==` equates),
/// with no `String` the library could not wipe; they order by scalar values (the writer's order).
struct StoredString {
    let start: UnsafeRawPointer
    /// Code units: bytes for ASCII, 16-bit units for UTF-16.
    let count: Int
    let isUTF16: Bool

    /// Whether every scalar is below 0x80 (so the writer writes it as ASCII).
    var isASCII: Bool { !isUTF16 || (0..<count).allSatisfy { unit($0) < 0x80 } }

    /// The bytes the writer gives this string as an object.
    var canonicalLength: Int {
        Census.headerLength(count) + (isASCII ? count : 2 * count)
    }

    @inline(__always)
    func unit(_ index: Int) -> UInt32 {
        UInt32(UInt16(bigEndian: start.loadUnaligned(fromByteOffset: 2 * index, as: UInt16.self)))
    }

    /// The scalars in order, as `UInt32`s.
    struct Scalars: IteratorProtocol {
        let string: StoredString
        var index = 0

        mutating func next() -> UInt32? {
            guard index < string.count else { return nil }
            guard string.isUTF16 else {
                defer { index += 1 }
                return UInt32(string.start.load(fromByteOffset: index, as: UInt8.self))
            }
            let first = string.unit(index)
            index += 1
            guard first & 0xFC00 == 0xD800 else { return first }
            defer { index += 1 }
            return 0x10000 + ((first - 0xD800) << 10) + (string.unit(index) - 0xDC00)
        }
    }

    var scalars: Scalars { Scalars(string: self) }

    /// Negative, zero or positive as `left` sorts before, with or after `right`.
    static func compare(_ left: StoredString, _ right: StoredString) -> Int {
        if !left.isUTF16, !right.isUTF16 { return compareBytes(left.start, left.count, right.start, right.count) }
        var (mine, theirs) = (left.scalars, right.scalars)
        return compareScalars(&mine) { theirs.next() }
    }

    /// Negative, zero or positive as `self` sorts before, equals or sorts after `key`.
    func compare(to key: String) -> Int {
        if !isUTF16,
            let result = key.utf8.withContiguousStorageIfAvailable({ utf8 in
                Self.compareBytes(start, count, UnsafeRawPointer(utf8.baseAddress), utf8.count)
            })
        {
            return result
        }
        var mine = scalars
        var theirs = key.unicodeScalars.makeIterator()
        return Self.compareScalars(&mine) { theirs.next()?.value }
    }

    /// Notes in `found` whether this key is `$archiver` or `$objects`, however stored: a
    /// dictionary holding both reads as a keyed archive, which the reader rejects.
    func noteArchiveKey(in found: inout (archiver: Bool, objects: Bool)) {
        guard count > 0, (isUTF16 ? unit(0) : UInt32(start.load(as: UInt8.self))) == 0x24 else { return }
        found.archiver = found.archiver || compare(to: "$archiver") == 0
        found.objects = found.objects || compare(to: "$objects") == 0
    }

    /// The caller's copy of the text, built in one allocation of its final storage (why: ``Census``).
    func string() -> String {
        guard isUTF16 else { return String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self) }
        // A unit takes at most 3 UTF-8 bytes, a surrogate pair 4 for 2 units.
        return String(unsafeUninitializedCapacity: 3 * count) { utf8 in
            var written = 0
            var scalars = self.scalars
            while let scalar = scalars.next() {
                written += Self.writeUTF8(scalar, to: UnsafeMutableRawPointer(utf8.baseAddress! + written))
            }
            return written
        }
    }

    // MARK: Hashing

    /// Feeds the UTF-8 bytes of `key` to `hasher`, in place.
    static func hash(_ key: String, into hasher: inout Hasher) {
        var key = key
        key.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// The 64 hash bits of `key`'s UTF-8 bytes, with this process's random seed.
    static func hashValue(_ key: String) -> UInt64 {
        var hasher = Hasher()
        hash(key, into: &hasher)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }

    /// ``hashValue(_:)`` of the text (a `Hasher` gives the same value for the same bytes however
    /// they are split into `combine` calls: `hashingIsSplitIndependent`).
    var hashValue: UInt64 {
        var hasher = Hasher()
        if isUTF16 {
            var scalars = self.scalars
            Self.hashUTF8(of: { scalars.next() }, into: &hasher)
        } else {
            hasher.combine(bytes: UnsafeRawBufferPointer(start: start, count: count))
        }
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }

    /// Feeds the scalars `next` gives to `hasher` as UTF-8, through a stack buffer wiped at the end.
    private static func hashUTF8(of next: () -> UInt32?, into hasher: inout Hasher) {
        withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { buffer in
            var used = 0
            while let scalar = next() {
                if used > 60 {
                    hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: buffer[..<used]))
                    used = 0
                }
                used += writeUTF8(scalar, to: buffer.baseAddress! + used)
            }
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: buffer[..<used]))
            explicit_bzero(buffer.baseAddress!, buffer.count)
        }
    }

    /// Writes `scalar` (never a surrogate) as UTF-8 at `output`; returns the byte count.
    @inline(__always)
    private static func writeUTF8(_ scalar: UInt32, to output: UnsafeMutableRawPointer) -> Int {
        var count = 0
        UTF8.encode(Unicode.Scalar(scalar)!) { byte in
            output.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
            count += 1
        }
        return count
    }

    // MARK: Comparing

    private static func compareBytes(_ left: UnsafeRawPointer, _ leftCount: Int, _ right: UnsafeRawPointer?, _ rightCount: Int)
        -> Int
    {
        let common = min(leftCount, rightCount)
        if common > 0, let right {
            let difference = memcmp(left, right, common)
            if difference != 0 { return Int(difference) }
        }
        return leftCount - rightCount
    }

    private static func compareScalars(_ left: inout Scalars, _ right: () -> UInt32?) -> Int {
        while true {
            switch (left.next(), right()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let mine?, let theirs?) where mine != theirs: return mine < theirs ? -1 : 1
            default: continue
            }
        }
    }
}

extension BlobView {
    /// The string object `index`, checked: a dictionary key, which must be a string.
    func string(_ index: Int) throws(SecureDictionaryError) -> StoredString {
        let offset = try objectOffset(index)
        guard let string = try string(marker: byte(at: offset), offset: offset) else {
            throw .corrupt(reason: "dictionary key is not a string")
        }
        return string
    }

    /// The string at `offset`, checked (ASCII bytes below 0x80, UTF-16 surrogates paired);
    /// `nil` when the object is not a string.
    func string(marker: UInt8, offset: Int) throws(SecureDictionaryError) -> StoredString? {
        switch marker & 0xF0 {
        case 0x50:
            let (count, start) = try countAndStart(marker: marker, offset: offset, unitSize: 1)
            guard Self.isASCII(UnsafeRawBufferPointer(start: base + start, count: count)) else {
                throw .corrupt(reason: "non-ASCII byte in an ASCII string")
            }
            return StoredString(start: base + start, count: count, isUTF16: false)
        case 0x60:
            let (count, start) = try countAndStart(marker: marker, offset: offset, unitSize: 2)
            let string = StoredString(start: base + start, count: count, isUTF16: true)
            var index = 0
            while index < count {
                let unit = string.unit(index)
                index += 1
                guard unit & 0xF800 == 0xD800 else { continue }
                // A high surrogate followed by a low one; anything else is unpaired.
                guard unit < 0xDC00, index < count, string.unit(index) & 0xFC00 == 0xDC00 else {
                    throw .corrupt(reason: "unpaired surrogate in a UTF-16 string")
                }
                index += 1
            }
            return string
        default:
            return nil
        }
    }
}
