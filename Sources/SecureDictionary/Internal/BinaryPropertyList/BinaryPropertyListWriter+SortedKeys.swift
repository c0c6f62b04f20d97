import Glibc

extension BinaryPropertyListWriter {
    /// The positions of `keys` in the order they are written: by their UTF-8 bytes, which is
    /// Unicode scalar order (as Python's `plistlib` sorts). Unlike `String`'s `<`, a strict
    /// order on any two distinct keys, so the output never depends on iteration order. The
    /// bytes are copied once into a buffer of final size, compared with `memcmp`, and wiped.
    static func sortedKeys<Keys: Collection<String>>(_ keys: Keys) -> [Keys.Index] {
        guard keys.count > 1 else { return Array(keys.indices) }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(keys.reduce(0) { $0 + $1.utf8.count })
        var spans: [(start: Int, count: Int, position: Keys.Index)] = []
        spans.reserveCapacity(keys.count)
        for position in keys.indices {
            let start = utf8.count
            utf8.append(contentsOf: keys[position].utf8)
            spans.append((start, utf8.count - start, position))
        }
        defer { Wipe.bytes(&utf8) }
        return utf8.withUnsafeBufferPointer { utf8 in
            let base = utf8.baseAddress!
            // By the bytes, the shorter first where one is a prefix of the other.
            return spans.sorted { left, right in
                let difference = memcmp(base + left.start, base + right.start, min(left.count, right.count))
                return difference != 0 ? difference < 0 : left.count < right.count
            }.map(\.position)
        }
    }
}
