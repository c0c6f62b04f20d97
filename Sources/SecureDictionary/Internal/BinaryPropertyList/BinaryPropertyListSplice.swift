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
/// It supports the blobs ``BinaryPropertyListWriter`` writes: walking the stored blob as the
/// writer writes, every object must be where, and numbered as, the writer would put it (the
/// root dictionary is object 0 at offset 8 with keys 1…n and values n+1…2n, nested objects
/// follow their value, numbered from 2n+1), every key ASCII and strictly ascending, every
/// number, header and string in the writer's form. Only then is the result provably what a
/// full encode would write; anything else (a blob another program wrote with shared objects
/// or other forms, a key that is not ASCII or begins with `$`, a new value that is a
/// container with elements, nested objects whose references would change width) gives
/// `nil`, and the caller encodes in full. The edited value's subtree is dropped, the values
/// before and after it move as two blocks, and the references inside nested containers are
/// renumbered. The stored blob is untrusted: every offset is checked against its bounds
/// before it is read.
///
/// A blob the splice accepts is one ``BinaryPropertyListReader`` decodes under the same
/// limits: the layout walk checks all the reader checks (size, depth, forms, ASCII and UTF-16
/// strings, no shared objects, no duplicate keys, no dictionary that reads as a keyed
/// archive). The write path relies on it to decode another writer's blob only after its own
/// write (``ItemState`` rule 9).
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
        // full encode rejects: leave that judgement to it. A stored blob over the size limit
        // is one the reader rejects.
        guard stored.count <= limits.maximumSize, key.utf8.allSatisfy({ $0 < 0x80 }), key.utf8.first != UInt8(ascii: "$"),
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
                        guard let layout = WriterLayout(blob, maximumDepth: limits.maximumDepth) else { return nil }
                        return try layout.splice(
                            keyObject: keyObject, value: value == nil ? nil : valueObject, limit: limits.maximumSize)
                    }
                }
            }
        }
        return try result.get()
    }
}

/// A stored blob checked to be in the writer's layout, object by object (see
/// ``BinaryPropertyListSplice``).
private struct WriterLayout {
    let blob: UnsafeRawBufferPointer
    /// Entries of the root dictionary (n): keys are objects 1…n, values n+1…2n.
    let count: Int
    let offsetSize: Int
    let referenceSize: Int
    /// Where the offset table begins: the end of the last object.
    let tableOffset: Int
    /// Where the first key object begins, right after the root dictionary's references.
    let keysStart: Int
    /// Where the first value object begins, right after the last key.
    let valuesStart: Int
    /// Per root value `i`, how many nested objects the values before it hold (entry n: all).
    /// Nested objects are numbered from 2n + 1 in the order their values come.
    let nestedBefore: [Int]

    /// `nil` unless `blob` is in the layout, in every detail.
    init?(_ blob: UnsafeRawBufferPointer, maximumDepth: Int) {
        let size = blob.count
        guard size >= 8 + 1 + 32, blob.prefix(8).elementsEqual("bplist00".utf8) else { return nil }
        let trailer = size - 32
        // The writer leaves the trailer's first six bytes zero (a copy of the blob must be
        // what it writes, byte for byte).
        guard blob[trailer..<(trailer + 6)].allSatisfy({ $0 == 0 }) else { return nil }
        let offsetSize = Int(blob[trailer + 6])
        let referenceSize = Int(blob[trailer + 7])
        guard [1, 2, 4, 8].contains(offsetSize), [1, 2, 4, 8].contains(referenceSize) else { return nil }
        let objects = Self.bigEndian(blob, trailer + 8, 8)
        let top = Self.bigEndian(blob, trailer + 16, 8)
        let table = Self.bigEndian(blob, trailer + 24, 8)
        guard objects >= 1, objects * UInt64(offsetSize) <= UInt64(trailer), top == 0,
            table == UInt64(trailer) - objects * UInt64(offsetSize),
            referenceSize == BinaryPropertyListWriter.byteWidth(of: objects - 1)
        else { return nil }
        var walker = Walker(
            blob: blob, objectCount: Int(objects), offsetSize: offsetSize, referenceSize: referenceSize,
            tableOffset: Int(table), maximumDepth: maximumDepth)
        guard let root = walker.walkRoot() else { return nil }
        self.blob = blob
        (self.offsetSize, self.referenceSize, tableOffset) = (offsetSize, referenceSize, Int(table))
        (count, keysStart, valuesStart, nestedBefore) = (root.count, root.keysStart, root.valuesStart, root.nestedBefore)
    }

    /// Walks the objects in the order the writer writes them, checking that each is where,
    /// and numbered as, the writer would put it, in the writer's form.
    private struct Walker {
        let blob: UnsafeRawBufferPointer
        let objectCount: Int
        let offsetSize: Int
        let referenceSize: Int
        let tableOffset: Int
        let maximumDepth: Int
        /// The next object number the writer would hand out.
        var next = 1
        var maximumOffset = 8

        mutating func walkRoot() -> (count: Int, keysStart: Int, valuesStart: Int, nestedBefore: [Int])? {
            guard let (keysStart, keys, values) = containerStart(number: 0, at: 8, marker: 0xD0) else { return nil }
            let count = keys.count
            guard var position = walkKeys(keys, from: keysStart) else { return nil }
            let valuesStart = position
            var nestedBefore: [Int] = []
            nestedBefore.reserveCapacity(count + 1)
            for number in values {
                nestedBefore.append(next - (2 * count + 1))
                guard let end = walk(number: number, at: position, depth: 2) else { return nil }
                position = end
            }
            nestedBefore.append(next - (2 * count + 1))
            guard position == tableOffset, next == objectCount,
                offsetSize == BinaryPropertyListWriter.byteWidth(of: UInt64(maximumOffset))
            else { return nil }
            return (count, keysStart, valuesStart, nestedBefore)
        }

        /// The object numbered `number` at `position`; where it ends.
        private mutating func walk(number: Int, at position: Int, depth: Int) -> Int? {
            guard position < tableOffset else { return nil }
            switch blob[position] >> 4 {
            case 0xA:
                guard depth <= maximumDepth, let (start, elements) = arrayStart(number: number, at: position) else {
                    return nil
                }
                var end = start
                for element in elements {
                    guard let next = walk(number: element, at: end, depth: depth + 1) else { return nil }
                    end = next
                }
                return end
            case 0xD:
                guard depth <= maximumDepth,
                    let (start, keys, values) = containerStart(number: number, at: position, marker: 0xD0),
                    var end = walkKeys(keys, from: start)
                else { return nil }
                for value in values {
                    guard let next = walk(number: value, at: end, depth: depth + 1) else { return nil }
                    end = next
                }
                return end
            default:
                guard isAt(number, position), let length = WriterLayout.leafLength(blob, at: position, limit: tableOffset)
                else { return nil }
                return position + length
            }
        }

        /// A dictionary's header and references, checked; where its keys begin and their numbers.
        private mutating func containerStart(
            number: Int, at position: Int, marker: UInt8
        ) -> (start: Int, keys: Range<Int>, values: Range<Int>)? {
            guard isAt(number, position), let header = WriterLayout.header(blob, at: position, marker: marker, end: tableOffset),
                let keys = reserve(header.count), let values = reserve(header.count),
                let start = references(keys, then: values, at: position + header.length)
            else { return nil }
            return (start, keys, values)
        }

        /// An array's header and references, checked; where its elements begin and their numbers.
        private mutating func arrayStart(number: Int, at position: Int) -> (start: Int, elements: Range<Int>)? {
            guard isAt(number, position), let header = WriterLayout.header(blob, at: position, marker: 0xA0, end: tableOffset),
                let elements = reserve(header.count), let start = references(elements, at: position + header.length)
            else { return nil }
            return (start, elements)
        }

        /// ASCII keys, strictly ascending, one after the other from `start`, not those of a
        /// keyed archive (`$archiver` with `$objects`, which the reader rejects); where they end.
        private mutating func walkKeys(_ keys: Range<Int>, from start: Int) -> Int? {
            var position = start
            var previous: UnsafeRawBufferPointer?
            var archiveKeys = 0
            for number in keys {
                guard isAt(number, position),
                    let header = WriterLayout.header(blob, at: position, marker: 0x50, end: tableOffset),
                    header.count <= tableOffset - position - header.length,
                    let key = WriterLayout.asciiString(blob, at: position, end: position + header.length + header.count)
                else { return nil }
                if let previous, !WriterLayout.precedes(previous, key) { return nil }
                if key.first == UInt8(ascii: "$"), key.elementsEqual("$archiver".utf8) || key.elementsEqual("$objects".utf8) {
                    archiveKeys += 1
                }
                previous = key
                position += header.length + header.count
            }
            return archiveKeys == 2 ? nil : position
        }

        /// Hands out `count` object numbers, as the writer does.
        private mutating func reserve(_ count: Int) -> Range<Int>? {
            guard count <= objectCount - next else { return nil }
            defer { next += count }
            return next..<(next + count)
        }

        /// Checks that the references at `start` are `numbers`, then `more`; where they end.
        private func references(_ numbers: Range<Int>, then more: Range<Int> = 0..<0, at start: Int) -> Int? {
            let count = numbers.count + more.count
            guard start <= tableOffset, count <= (tableOffset - start) / referenceSize else { return nil }
            var position = start
            for number in numbers where WriterLayout.bigEndian(blob, position, referenceSize) == UInt64(number) {
                position += referenceSize
            }
            for number in more where WriterLayout.bigEndian(blob, position, referenceSize) == UInt64(number) {
                position += referenceSize
            }
            return position == start + count * referenceSize ? position : nil
        }

        /// Whether the offset table puts object `number` at `position`.
        private mutating func isAt(_ number: Int, _ position: Int) -> Bool {
            guard number < objectCount, WriterLayout.offset(blob, tableOffset, offsetSize, number) == position else {
                return false
            }
            maximumOffset = max(maximumOffset, position)
            return true
        }
    }

    /// The offset of object `index` (in bounds for `index` < the object count).
    private func offset(_ index: Int) -> Int { Self.offset(blob, tableOffset, offsetSize, index) }

    private static func offset(_ blob: UnsafeRawBufferPointer, _ table: Int, _ width: Int, _ index: Int) -> Int {
        Int(truncatingIfNeeded: bigEndian(blob, table + index * width, width))
    }

    /// Where key `index` begins; `count` gives the end of the keys.
    private func keyStart(_ index: Int) -> Int { index < count ? offset(1 + index) : valuesStart }
    /// Where value `index` begins; `count` gives the end of the values.
    private func valueStart(_ index: Int) -> Int { index < count ? offset(1 + count + index) : tableOffset }

    /// The blob with the key of `keyObject` (its object's bytes) set to `value` (the
    /// value object's bytes, an object that refers to no other; `nil` removes the key).
    /// `nil` if `keyObject` is not ASCII, or if the nested objects that remain would need
    /// wider or narrower references than now.
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
        if value == nil && !found {
            guard blob.count <= limit else { throw .tooLarge(size: blob.count, limit: limit) }
            return Array(blob)
        }

        // What goes where: each part (keys, values) keeps its objects before `position`, gets
        // the new object (if any), then keeps its objects from its suffix index on. Nested
        // objects keep their order; those of a replaced or removed value go.
        let newCount = count + (value != nil && !found ? 1 : 0) - (value == nil ? 1 : 0)
        let insertedKey = value != nil && !found ? keyObject : nil
        let keysSuffix = value == nil ? position + 1 : position
        let valuesSuffix = found ? position + 1 : position
        let removedNested = found ? nestedBefore[position + 1] - nestedBefore[position] : 0
        let keptNested = nestedBefore[count] - removedNested
        let referenceSize = BinaryPropertyListWriter.byteWidth(of: UInt64(2 * newCount + keptNested))
        // Nested containers are copied as they are: their references must keep their width.
        guard keptNested == 0 || referenceSize == self.referenceSize else { return nil }
        let header = Self.headerBytes(marker: 0xD0, count: newCount)
        let newKeysStart = 8 + header.count + 2 * newCount * referenceSize
        var offsets = [8]
        offsets.reserveCapacity(2 * newCount + 1 + keptNested)
        let newValuesStart = appendOffsets(
            &offsets, of: keyStart, from: newKeysStart, old: keysStart, position, insertedKey?.count, keysSuffix)
        let newTable = appendOffsets(
            &offsets, of: valueStart, from: newValuesStart, old: valuesStart, position, value?.count, valuesSuffix)
        // The values before the edit, and those after it, each move as one block of bytes
        // and one block of object numbers.
        let before = Shift(
            bytes: newValuesStart - valuesStart, numbers: 2 * (newCount - count),
            values: 0..<position, nested: nestedNumbers(0..<position))
        let after = Shift(
            bytes: newTable - tableOffset, numbers: 2 * (newCount - count) - removedNested,
            values: valuesSuffix..<count, nested: nestedNumbers(valuesSuffix..<count))
        for shift in [before, after] {
            for number in shift.nested { offsets.append(offset(number) + shift.bytes) }
        }
        let offsetSize = BinaryPropertyListWriter.byteWidth(of: UInt64(offsets.max()!))
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
            for shift in [before, after] { renumber(shift, in: &output) }
            for offset in offsets { output.appendBigEndian(UInt64(offset), width: offsetSize) }
            output.append([0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)])
            output.appendBigEndian(UInt64(offsets.count), width: 8)
            output.appendBigEndian(0, width: 8)
            output.appendBigEndian(UInt64(newTable), width: 8)
            precondition(output.position == total, "a splice wrote other than it measured")
            initialized = total
        }
    }

    /// How a block of root values (and their nested objects) moves.
    private struct Shift {
        var bytes: Int
        var numbers: Int
        var values: Range<Int>
        var nested: Range<Int>
    }

    /// The numbers of the nested objects of root values `values`.
    private func nestedNumbers(_ values: Range<Int>) -> Range<Int> {
        let base = 2 * count + 1
        return (base + nestedBefore[values.lowerBound])..<(base + nestedBefore[values.upperBound])
    }

    /// Adds `shift.numbers` to every reference of the containers in the block, in `output`
    /// (where the block lies `shift.bytes` from its old place).
    private func renumber(_ shift: Shift, in output: inout Output) {
        guard shift.numbers != 0, !shift.nested.isEmpty else { return }
        for value in shift.values { renumber(object: 1 + count + value, shift, in: &output) }
        for number in shift.nested { renumber(object: number, shift, in: &output) }
    }

    /// ``renumber(_:in:)`` for one object: nothing unless it is a container.
    private func renumber(object number: Int, _ shift: Shift, in output: inout Output) {
        let start = offset(number)
        let marker = blob[start] & 0xF0
        guard marker == 0xA0 || marker == 0xD0,
            let header = Self.header(blob, at: start, marker: marker, end: tableOffset)
        else { return }
        let references = start + header.length
        for index in 0..<(marker == 0xD0 ? 2 * header.count : header.count) {
            let at = references + index * referenceSize
            let renumbered = Int(Self.bigEndian(blob, at, referenceSize)) + shift.numbers
            output.store(UInt64(renumbered), width: referenceSize, at: at + shift.bytes)
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

    /// The length of the object at `start` that refers to no other, when it is in the form
    /// the writer gives it and ends by `limit`.
    static func leafLength(_ blob: UnsafeRawBufferPointer, at start: Int, limit: Int) -> Int? {
        guard start < limit else { return nil }
        let marker = blob[start]
        let length: Int
        switch marker >> 4 {
        case 0x0, 0xA, 0xD: length = 1
        case 0x1: length = marker == 0x14 ? 17 : 1 + (1 << Int(min(marker & 0x0F, 3)))
        case 0x2, 0x3: length = 9
        case 0x4, 0x5:
            guard let header = header(blob, at: start, marker: marker & 0xF0, end: limit) else { return nil }
            length = header.length + header.count
        case 0x6:
            guard let header = header(blob, at: start, marker: 0x60, end: limit) else { return nil }
            length = header.length + 2 * header.count
        default: return nil
        }
        guard length <= limit - start, isCanonicalLeaf(blob, at: start, end: start + length) else { return nil }
        return length
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

    /// Overwrites `width` bytes at `position` (already written) with `value`, big-endian.
    func store(_ value: UInt64, width: Int, at position: Int) {
        for index in 0..<width {
            let shift = 8 * (width - 1 - index)
            base.storeBytes(of: UInt8(truncatingIfNeeded: value >> shift), toByteOffset: position + index, as: UInt8.self)
        }
    }

    mutating func appendBigEndian(_ value: UInt64, width: Int) {
        for shift in stride(from: 8 * (width - 1), through: 0, by: -8) {
            base.storeBytes(of: UInt8(truncatingIfNeeded: value >> shift), toByteOffset: position, as: UInt8.self)
            position += 1
        }
    }
}
