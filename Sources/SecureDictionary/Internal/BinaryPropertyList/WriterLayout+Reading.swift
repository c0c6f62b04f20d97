#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// How ``WriterLayout`` walks and reads a stored blob: every object checked against the
/// writer's layout and form, every offset against the blob's bounds before it is read.
extension WriterLayout {
    /// Walks the objects in the order the writer writes them, checking that each is where,
    /// and numbered as, the writer would put it, in the writer's form.
    struct Walker {
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

    // MARK: Reading the blob

    static func bigEndian(_ blob: UnsafeRawBufferPointer, _ at: Int, _ width: Int) -> UInt64 {
        var value: UInt64 = 0
        for index in at..<(at + width) { value = value << 8 | UInt64(blob[index]) }
        return value
    }

    /// A marker of kind `marker` (high nibble) with its count: inline below 15, else 0x?F and
    /// an integer of the smallest width. `nil` when it is not in that form or runs past `end`.
    static func header(
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
    static func headerBytes(marker: UInt8, count: Int) -> [UInt8] {
        if count < 15 { return [marker | UInt8(count)] }
        let width = BinaryPropertyListWriter.byteWidth(of: UInt64(count))
        var bytes: [UInt8] = [marker | 0x0F, 0x10 | UInt8(width.trailingZeroBitCount)]
        for shift in stride(from: 8 * (width - 1), through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: count >> shift)) }
        return bytes
    }

    /// The characters of the ASCII string object that fills `start..<end` exactly.
    static func asciiString(_ blob: UnsafeRawBufferPointer, at start: Int, end: Int) -> UnsafeRawBufferPointer? {
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
    static func isCanonicalLeaf(_ blob: UnsafeRawBufferPointer, at start: Int, end: Int) -> Bool {
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
    static func isCanonicalUTF16(_ units: UnsafeRawBufferPointer) -> Bool {
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
    static func precedes(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Bool {
        let common = min(left.count, right.count)
        if common > 0 {
            let difference = memcmp(left.baseAddress!, right.baseAddress!, common)
            if difference != 0 { return difference < 0 }
        }
        return left.count < right.count
    }
}

/// Appends to a buffer measured beforehand (the caller checks the total).
struct SpliceOutput {
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
