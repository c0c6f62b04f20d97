#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Reading a validated blob in place: the caller's copies of its values, and whether two
/// values are stored identically, without a `String` or `Data` the library would keep.
///
/// Only for a blob ``BinaryPropertyListReader`` validated (with the same bytes since): the
/// recursions here trust that no container is referenced twice and that the depth is bounded.
extension BlobView {
    /// The caller's copy of object `index`.
    func value(of index: Int) throws(SecureDictionaryError) -> PropertyListValue {
        let offset = try objectOffset(index)
        let marker = byte(at: offset)
        switch marker & 0xF0 {
        case 0xA0:
            let (count, start) = try countAndStart(marker: marker, offset: offset, unitSize: objectRefSize)
            return .array(
                try (0..<count).map { element throws(SecureDictionaryError) in
                    try value(of: reference(at: start + element * objectRefSize))
                })
        case 0xD0:
            return .dictionary(try entries(of: index))
        default:
            return try scalar(marker: marker, offset: offset)
        }
    }

    /// The caller's copy of the dictionary `index`. Keys that differ in their scalars but are
    /// canonically equivalent (`é` as U+00E9 and as `e` + U+0301) are one key to a Swift
    /// dictionary: the copy holds one of them.
    func entries(of index: Int) throws(SecureDictionaryError) -> [String: PropertyListValue] {
        let (count, start) = try container(index)
        var entries = [String: PropertyListValue](minimumCapacity: count)
        let values = start + count * objectRefSize
        for entry in 0..<count {
            let key = try string(reference(at: start + entry * objectRefSize)).string()
            entries[key] = try value(of: reference(at: values + entry * objectRefSize))
        }
        return entries
    }

    // MARK: Identity

    /// Whether object `index` here and object `other` of `view` are stored identically, as a
    /// change event tells values apart: strings and keys by their scalars, reals and dates by
    /// their bits, integer, real and bool apart.
    func holds(_ index: Int, identicalTo other: Int, of view: BlobView) throws(SecureDictionaryError) -> Bool {
        let (offset, otherOffset) = (try objectOffset(index), try view.objectOffset(other))
        let (marker, otherMarker) = (byte(at: offset), view.byte(at: otherOffset))
        switch (marker & 0xF0, otherMarker & 0xF0) {
        case (0x50, 0x50), (0x50, 0x60), (0x60, 0x50), (0x60, 0x60):
            let mine = try string(marker: marker, offset: offset)!
            return try StoredString.compare(mine, view.string(marker: otherMarker, offset: otherOffset)!) == 0
        case (0x40, 0x40):
            let (count, start) = try countAndStart(marker: marker, offset: offset, unitSize: 1)
            let (otherCount, otherStart) = try view.countAndStart(marker: otherMarker, offset: otherOffset, unitSize: 1)
            return count == otherCount && (count == 0 || memcmp(base + start, view.base + otherStart, count) == 0)
        case (0xA0, 0xA0), (0xD0, 0xD0):
            let (count, start) = try container(index)
            let (otherCount, otherStart) = try view.container(other)
            guard count == otherCount else { return false }
            // Elements in order; a dictionary's entries pairwise in the writer's key order.
            let isDictionary = marker & 0xF0 == 0xD0
            let order = try isDictionary ? keys(count: count, references: start).order : nil
            let otherOrder = try isDictionary ? view.keys(count: count, references: otherStart).order : nil
            let values = isDictionary ? count : 0
            for entry in 0..<count {
                let (mine, theirs) = (order?[entry] ?? entry, otherOrder?[entry] ?? entry)
                if isDictionary {
                    let key = try string(reference(at: start + mine * objectRefSize))
                    let otherKey = try view.string(view.reference(at: otherStart + theirs * view.objectRefSize))
                    guard StoredString.compare(key, otherKey) == 0 else { return false }
                }
                let value = try reference(at: start + (values + mine) * objectRefSize)
                let otherValue = try view.reference(at: otherStart + (values + theirs) * view.objectRefSize)
                guard try holds(value, identicalTo: otherValue, of: view) else { return false }
            }
            return true
        case (0x40, _), (0x50, _), (0x60, _), (0xA0, _), (0xD0, _), (_, 0x40), (_, 0x50), (_, 0x60), (_, 0xA0), (_, 0xD0):
            return false
        default:
            return try scalar(marker: marker, offset: offset).isStoredIdentically(
                to: view.scalar(marker: otherMarker, offset: otherOffset))
        }
    }
}
