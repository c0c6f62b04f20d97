#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Derives the blob of a one-key change from the stored blob with a few bulk copies, where
/// ``BinaryPropertyList/encode(_:limits:)`` walks, sorts and writes every entry.
///
/// ```swift
/// if let blob = try BinaryPropertyListSplice.blob(editing: stored, key: "theme", value: .string("dark"), limits: .default) {
///     // byte for byte what encode would give for the edited dictionary
/// } else {
///     // not a layout the splice supports: encode in full
/// }
/// ```
///
/// It supports the blobs ``BinaryPropertyListWriter`` writes for a flat dictionary: the root
/// dictionary is object 0 at offset 8, its references are 1…n (keys) then n+1…2n (values),
/// the keys are ASCII and strictly ascending by their bytes, every object lies right after
/// the one before it, every value refers to no other object, and every number, header and
/// string form is the one the writer chooses. Only then is the result provably what a full
/// encode would write, so anything else (a nested container, a blob another program wrote
/// with shared objects or other forms, a key that is not ASCII or begins with `$`) gives
/// `nil`, and the caller encodes in full. The stored blob is untrusted: every offset is
/// checked against its bounds before it is read.
enum BinaryPropertyListSplice {
    /// `stored` with `key` set to `value` (removed when `value` is `nil`); `nil` when the
    /// splice does not apply. Removing an absent key gives a copy of `stored`.
    ///
    /// - Throws: ``BinaryPropertyListError/tooLarge(size:limit:)`` when the result would
    ///   exceed `limits.maximumSize` (nothing is built), and what the full encode throws for
    ///   `value` itself.
    static func blob(
        editing stored: [UInt8], key: String, value: PropertyListValue?, limits: PropertyListLimits
    ) throws(BinaryPropertyListError) -> [UInt8]? {
        var keyObject: [UInt8] = []
        var valueObject: [UInt8] = []
        defer {
            Wipe.bytes(&keyObject)
            Wipe.bytes(&valueObject)
        }
        // A key beginning with "$" may make the dictionary read as a keyed archive, which the
        // full encode rejects: leave that judgement to it.
        guard key.utf8.allSatisfy({ $0 < 0x80 }), key.utf8.first != UInt8(ascii: "$"),
            let keyBytes = try BinaryPropertyListWriter.objectBytes(of: .string(key), maximumDepth: limits.maximumDepth)
        else { return nil }
        keyObject = keyBytes
        if let value {
            guard let bytes = try BinaryPropertyListWriter.objectBytes(of: value, maximumDepth: limits.maximumDepth) else {
                return nil
            }
            valueObject = bytes
        }
        let result: Result<[UInt8]?, BinaryPropertyListError> = stored.withUnsafeBytes { blob in
            keyObject.withUnsafeBytes { keyObject in
                valueObject.withUnsafeBytes { valueObject in
                    Result { () throws(BinaryPropertyListError) in
                        guard let layout = FlatLayout(blob) else { return nil }
                        return try layout.splice(
                            keyObject: keyObject, value: value == nil ? nil : valueObject, limit: limits.maximumSize)
                    }
                }
            }
        }
        return try result.get()
    }
}

/// A stored blob checked to be in the writer's flat layout (see ``BinaryPropertyListSplice``).
private struct FlatLayout {
    let blob: UnsafeRawBufferPointer
    /// Entries of the root dictionary (n); objects are 2n + 1.
    let count: Int
    let offsetSize: Int
    /// Where the offset table begins: the end of the last object.
    let tableOffset: Int
    /// Where the first key object begins, right after the root dictionary's references.
    let keysStart: Int
    /// Where the first value object begins, right after the last key.
    let valuesStart: Int

    /// `nil` unless `blob` is in the layout, in every detail.
    init?(_ blob: UnsafeRawBufferPointer) {
        self.blob = blob
        let size = blob.count
        guard size >= 8 + 1 + 32, blob.prefix(8).elementsEqual("bplist00".utf8) else { return nil }
        let trailer = size - 32
        let offsetSize = Int(blob[trailer + 6])
        let referenceSize = Int(blob[trailer + 7])
        guard [1, 2, 4, 8].contains(offsetSize), [1, 2, 4, 8].contains(referenceSize) else { return nil }
        let objects = Self.bigEndian(blob, trailer + 8, 8)
        let top = Self.bigEndian(blob, trailer + 16, 8)
        let table = Self.bigEndian(blob, trailer + 24, 8)
        guard objects >= 1, objects % 2 == 1, objects * UInt64(offsetSize) <= UInt64(trailer), top == 0,
            table == UInt64(trailer) - objects * UInt64(offsetSize)
        else { return nil }
        let count = Int(objects / 2)
        let tableOffset = Int(table)
        guard referenceSize == BinaryPropertyListWriter.byteWidth(of: objects - 1) else { return nil }
        let offset = { (index: Int) in Self.offset(blob, tableOffset, offsetSize, index) }
        guard offset(0) == 8, let header = Self.header(blob, at: 8, marker: 0xD0, end: tableOffset), header.count == count
        else { return nil }
        // The references: 1…n, then n+1…2n.
        let references = 8 + header.length
        guard references <= tableOffset, 2 * count <= (tableOffset - references) / referenceSize else { return nil }
        for index in 0..<(2 * count)
        where Self.bigEndian(blob, references + index * referenceSize, referenceSize) != UInt64(index + 1) {
            return nil
        }
        let keysStart = references + 2 * count * referenceSize
        let valuesStart = count == 0 ? tableOffset : offset(count + 1)
        guard count > 0 || keysStart == tableOffset else { return nil }
        guard count == 0 || (offset(1) == keysStart && valuesStart > keysStart && valuesStart < tableOffset) else {
            return nil
        }
        guard offsetSize == BinaryPropertyListWriter.byteWidth(of: UInt64(count == 0 ? 8 : offset(2 * count))) else {
            return nil
        }
        // Every object: right after the one before it, in the writer's own form; keys ASCII
        // and strictly ascending.
        var previousKey: UnsafeRawBufferPointer?
        for object in stride(from: 1, through: 2 * count, by: 1) {
            let start = offset(object)
            let end = object == 2 * count ? tableOffset : offset(object + 1)
            guard start < end, end <= tableOffset else { return nil }
            if object <= count {
                guard let key = Self.asciiString(blob, at: start, end: end) else { return nil }
                if let previousKey, !Self.precedes(previousKey, key) { return nil }
                previousKey = key
            } else {
                guard Self.isCanonicalLeaf(blob, at: start, end: end) else { return nil }
            }
        }
        (self.count, self.offsetSize, self.tableOffset) = (count, offsetSize, tableOffset)
        (self.keysStart, self.valuesStart) = (keysStart, valuesStart)
    }

    /// The offset of object `index` (in bounds for `index` ≤ 2n: the table is inside the blob).
    private func offset(_ index: Int) -> Int { Self.offset(blob, tableOffset, offsetSize, index) }

    private static func offset(_ blob: UnsafeRawBufferPointer, _ table: Int, _ width: Int, _ index: Int) -> Int {
        Int(truncatingIfNeeded: bigEndian(blob, table + index * width, width))
    }

    /// Where key `index` begins; `count` gives the end of the keys.
    private func keyStart(_ index: Int) -> Int { index < count ? offset(1 + index) : valuesStart }
    /// Where value `index` begins; `count` gives the end of the values.
    private func valueStart(_ index: Int) -> Int { index < count ? offset(1 + count + index) : tableOffset }

    /// The blob with the key of `keyObject` (its object's bytes) set to `value` (the
    /// value object's bytes; `nil` removes the key). `nil` if `keyObject` is not ASCII.
    func splice(
        keyObject: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer?, limit: Int
    ) throws(BinaryPropertyListError) -> [UInt8]? {
        guard let key = Self.asciiString(keyObject, at: 0, end: keyObject.count) else { return nil }
        // Binary search: the first key not below the one edited.
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if Self.precedes(self.key(middle), key) { low = middle + 1 } else { high = middle }
        }
        let position = low
        let found = position < count && self.key(position).elementsEqual(key)
        if value == nil && !found { return Array(blob) }

        // What goes where: each part (keys, values) keeps its objects before `position`, gets
        // the new object (if any), then keeps its objects from its suffix index on.
        let newCount = count + (value != nil && !found ? 1 : 0) - (value == nil ? 1 : 0)
        let insertedKey = value != nil && !found ? keyObject : nil
        let keysSuffix = value == nil ? position + 1 : position
        let valuesSuffix = found ? position + 1 : position
        let header = Self.headerBytes(marker: 0xD0, count: newCount)
        let referenceSize = BinaryPropertyListWriter.byteWidth(of: UInt64(2 * newCount))
        let newKeysStart = 8 + header.count + 2 * newCount * referenceSize
        var offsets = [8]
        offsets.reserveCapacity(2 * newCount + 1)
        let newValuesStart = appendOffsets(
            &offsets, of: keyStart, from: newKeysStart, old: keysStart, position, insertedKey?.count, keysSuffix)
        let newTable = appendOffsets(
            &offsets, of: valueStart, from: newValuesStart, old: valuesStart, position, value?.count, valuesSuffix)
        let offsetSize = BinaryPropertyListWriter.byteWidth(of: UInt64(offsets.last!))
        let total = newTable + offsets.count * offsetSize + 32
        guard total <= limit else { throw .tooLarge(size: total, limit: limit) }

        return [UInt8](unsafeUninitializedCapacity: total) { buffer, initialized in
            var output = Output(base: UnsafeMutableRawPointer(buffer.baseAddress!))
            output.append("bplist00".utf8)
            output.append(header)
            if newCount > 0 {
                for reference in 1...(2 * newCount) { output.appendBigEndian(UInt64(reference), width: referenceSize) }
            }
            output.append(UnsafeRawBufferPointer(rebasing: blob[keysStart..<keyStart(position)]))
            if let insertedKey { output.append(insertedKey) }
            output.append(UnsafeRawBufferPointer(rebasing: blob[keyStart(keysSuffix)..<valuesStart]))
            output.append(UnsafeRawBufferPointer(rebasing: blob[valuesStart..<valueStart(position)]))
            if let value { output.append(value) }
            output.append(UnsafeRawBufferPointer(rebasing: blob[valueStart(valuesSuffix)..<tableOffset]))
            for offset in offsets { output.appendBigEndian(UInt64(offset), width: offsetSize) }
            output.append([0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)])
            output.appendBigEndian(UInt64(offsets.count), width: 8)
            output.appendBigEndian(0, width: 8)
            output.appendBigEndian(UInt64(newTable), width: 8)
            precondition(output.position == total, "a splice wrote other than it measured")
            initialized = total
        }
    }

    /// The characters of key `index`.
    private func key(_ index: Int) -> UnsafeRawBufferPointer {
        // Checked when the layout was: an ASCII string filling its extent.
        Self.asciiString(blob, at: keyStart(index), end: keyStart(index + 1))!
    }

    /// Appends the new offsets of one part (keys or values, whose object `index` begins at
    /// `start(index)`, the part at `old`), now beginning at `newStart`: the objects before
    /// `position`, then a new object of `inserted` bytes (`nil`: none), then the objects from
    /// `suffix` on. Returns where the part ends now.
    private func appendOffsets(
        _ offsets: inout [Int], of start: (Int) -> Int, from newStart: Int, old: Int, _ position: Int,
        _ inserted: Int?, _ suffix: Int
    ) -> Int {
        for index in 0..<position { offsets.append(newStart + start(index) - old) }
        let editAt = newStart + start(position) - old
        if inserted != nil { offsets.append(editAt) }
        let shift = editAt + (inserted ?? 0) - start(suffix)
        for index in suffix..<count { offsets.append(start(index) + shift) }
        return start(count) + shift
    }

    // MARK: Reading the blob

    private static func bigEndian(_ blob: UnsafeRawBufferPointer, _ at: Int, _ width: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in at..<(at + width) { value = value << 8 | UInt64(blob[index]) }
        return value
    }

    /// A marker of kind `marker` (high nibble) with its count: inline below 15, else 0x?F and
    /// an integer of the smallest width. `nil` when it is not in that form or runs past `end`.
    private static func header(
        _ blob: UnsafeRawBufferPointer, at start: Int, marker: UInt8, end: Int
    ) -> (count: Int, length: Int)? {
        guard start < end, blob[start] & 0xF0 == marker else { return nil }
        let inline = Int(blob[start] & 0x0F)
        if inline < 15 { return (inline, 1) }
        guard start + 1 < end, blob[start + 1] & 0xF0 == 0x10, blob[start + 1] & 0x0F < 4 else { return nil }
        let width = 1 << Int(blob[start + 1] & 0x0F)
        guard start + 2 + width <= end else { return nil }
        let count = bigEndian(blob, start + 2, width)
        guard count >= 15, count <= UInt64(end), BinaryPropertyListWriter.byteWidth(of: count) == width else {
            return nil
        }
        return (Int(count), 2 + width)
    }

    /// The header bytes the writer gives a container or string of `count`.
    private static func headerBytes(marker: UInt8, count: Int) -> [UInt8] {
        if count < 15 { return [marker | UInt8(count)] }
        let width = BinaryPropertyListWriter.byteWidth(of: UInt64(count))
        var bytes: [UInt8] = [marker | 0x0F, 0x10 | UInt8(width.trailingZeroBitCount)]
        for shift in stride(from: 8 * (width - 1), through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: count >> shift)) }
        return bytes
    }

    /// The characters of the ASCII string object that fills `start..<end` exactly.
    private static func asciiString(_ blob: UnsafeRawBufferPointer, at start: Int, end: Int) -> UnsafeRawBufferPointer? {
        guard let header = header(blob, at: start, marker: 0x50, end: end), header.length + header.count == end - start
        else { return nil }
        let characters = UnsafeRawBufferPointer(rebasing: blob[(start + header.length)..<end])
        return BinaryPropertyListReader.isASCII(characters) ? characters : nil
    }

    /// Whether `start..<end` is exactly one object that refers to no other, in the form the
    /// writer gives its value (so a decode and a full encode give the same bytes back).
    private static func isCanonicalLeaf(_ blob: UnsafeRawBufferPointer, at start: Int, end: Int) -> Bool {
        let marker = blob[start]
        let length = end - start
        switch marker >> 4 {
        case 0x0: return (marker == 0x08 || marker == 0x09) && length == 1
        case 0x1:
            switch marker {
            case 0x10...0x13:
                let width = 1 << Int(marker & 0x0F)
                guard length == 1 + width else { return false }
                let value = bigEndian(blob, start + 1, width)
                // The smallest width for a non-negative value; 8 bytes for the rest.
                return width == 1 || value >= UInt64(1) << (4 * width)
            case 0x14:
                // Above Int64.max only, high half zero.
                return length == 17 && bigEndian(blob, start + 1, 8) == 0 && bigEndian(blob, start + 9, 8) > UInt64(Int64.max)
            default: return false
            }
        case 0x2: return marker == 0x23 && length == 9
        case 0x3: return marker == 0x33 && length == 9
        case 0x4:
            guard let header = header(blob, at: start, marker: 0x40, end: end) else { return false }
            return header.length + header.count == length
        case 0x5: return asciiString(blob, at: start, end: end) != nil
        case 0x6:
            guard let header = header(blob, at: start, marker: 0x60, end: end), header.length + 2 * header.count == length
            else { return false }
            return isCanonicalUTF16(UnsafeRawBufferPointer(rebasing: blob[(start + header.length)..<end]))
        case 0xA: return marker == 0xA0 && length == 1
        case 0xD: return marker == 0xD0 && length == 1
        default: return false
        }
    }

    /// UTF-16 big-endian that decodes without repair (surrogates paired) and holds a unit of
    /// 0x80 or more (else the writer would have written ASCII).
    private static func isCanonicalUTF16(_ units: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        var beyondASCII = false
        while index < units.count {
            let unit = UInt16(units[index]) << 8 | UInt16(units[index + 1])
            index += 2
            if unit >= 0x80 { beyondASCII = true }
            if unit & 0xFC00 == 0xDC00 { return false }  // a low surrogate with no high one before it
            if unit & 0xFC00 == 0xD800 {
                guard index < units.count, units[index] & 0xFC == 0xDC else { return false }
                index += 2
            }
        }
        return beyondASCII
    }

    /// The writer's key order: by bytes, a prefix first.
    private static func precedes(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Bool {
        let common = min(left.count, right.count)
        if common > 0 {
            let difference = memcmp(left.baseAddress!, right.baseAddress!, common)
            if difference != 0 { return difference < 0 }
        }
        return left.count < right.count
    }
}

/// Appends to a buffer measured beforehand (the caller checks the total).
private struct Output {
    let base: UnsafeMutableRawPointer
    var position = 0

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        (base + position).copyMemory(from: source, byteCount: bytes.count)
        position += bytes.count
    }

    mutating func append<S: Sequence<UInt8>>(_ bytes: S) {
        for byte in bytes {
            base.storeBytes(of: byte, toByteOffset: position, as: UInt8.self)
            position += 1
        }
    }

    mutating func appendBigEndian(_ value: UInt64, width: Int) {
        for shift in stride(from: 8 * (width - 1), through: 0, by: -8) {
            base.storeBytes(of: UInt8(truncatingIfNeeded: value >> shift), toByteOffset: position, as: UInt8.self)
            position += 1
        }
    }
}
