import Glibc

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
            let array = try container(index)
            return .array(
                try (0..<array.count).map { element throws(SecureDictionaryError) in
                    try value(of: valueObject(element, of: array))
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
        let dictionary = try container(index)
        var entries = [String: PropertyListValue](minimumCapacity: dictionary.count)
        for entry in 0..<dictionary.count {
            entries[try string(keyObject(entry, of: dictionary)).string()] = try value(of: valueObject(entry, of: dictionary))
        }
        return entries
    }

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
            let (mine, theirs) = (try container(index, ordered: true), try view.container(other, ordered: true))
            guard mine.count == theirs.count else { return false }
            // Elements in order; a dictionary's entries pairwise in the writer's key order.
            for position in 0..<mine.count {
                let (entry, otherEntry) = (mine.entry(inOrder: position), theirs.entry(inOrder: position))
                if mine.isDictionary {
                    let otherKey = try view.string(view.keyObject(otherEntry, of: theirs))
                    guard try StoredString.compare(string(keyObject(entry, of: mine)), otherKey) == 0 else { return false }
                }
                let value = try valueObject(entry, of: mine)
                guard try holds(value, identicalTo: view.valueObject(otherEntry, of: theirs), of: view) else { return false }
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
