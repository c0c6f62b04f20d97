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
/// archive). The write path does not rely on that: it decodes the stored blob before it
/// splices (``ItemState``); `BinaryPropertyListSpliceTests` checks it all the same.
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
struct WriterLayout {
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

    /// The offset of object `index` (in bounds for `index` < the object count).
    func offset(_ index: Int) -> Int { Self.offset(blob, tableOffset, offsetSize, index) }

    static func offset(_ blob: UnsafeRawBufferPointer, _ table: Int, _ width: Int, _ index: Int) -> Int {
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
            var output = SpliceOutput(base: UnsafeMutableRawPointer(buffer.baseAddress!))
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
    private func renumber(_ shift: Shift, in output: inout SpliceOutput) {
        guard shift.numbers != 0, !shift.nested.isEmpty else { return }
        for value in shift.values { renumber(object: 1 + count + value, shift, in: &output) }
        for number in shift.nested { renumber(object: number, shift, in: &output) }
    }

    /// ``renumber(_:in:)`` for one object: nothing unless it is a container.
    private func renumber(object number: Int, _ shift: Shift, in output: inout SpliceOutput) {
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
}
