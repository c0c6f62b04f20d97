#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension BinaryPropertyListWriter {
    /// A dictionary's keys in the order they are written: by their UTF-8 bytes, which is
    /// Unicode scalar order (as Python's `plistlib` sorts), and the same as `String`'s `<` for
    /// keys in NFC. Unlike `<`, it is a strict order on any two distinct keys, so the output
    /// never depends on the dictionary's iteration order.
    ///
    /// The keys' bytes are copied once into `utf8`, allocated at its final size (a buffer that
    /// grew would leave copies of keys behind) and wiped by ``wipe()``, and compared there with
    /// `memcmp`: no `String` comparison, no reference counting, no copy of a key elsewhere.
    struct SortedKeys<Keys: Collection<String>> {
        struct Key {
            var start: Int
            var count: Int
            var position: Keys.Index
        }

        var utf8: [UInt8] = []
        var order: [Key] = []

        init(_ keys: Keys) {
            utf8.reserveCapacity(keys.reduce(0) { $0 + $1.utf8.count })
            var found: [Key] = []
            found.reserveCapacity(keys.count)
            for position in keys.indices {
                let start = utf8.count
                utf8.append(contentsOf: keys[position].utf8)
                found.append(Key(start: start, count: utf8.count - start, position: position))
            }
            guard found.count > 1 else {
                order = found
                return
            }
            order = utf8.withUnsafeBufferPointer { utf8 in
                let base = utf8.baseAddress!
                return found.sorted { Self.precedes($0, $1, base) }
            }
        }

        /// Wipes the keys' bytes.
        mutating func wipe() { Wipe.bytes(&utf8) }

        /// The order itself: by the keys' UTF-8 bytes, the shorter first where one is a
        /// prefix of the other.
        private static func precedes(_ left: Key, _ right: Key, _ base: UnsafePointer<UInt8>) -> Bool {
            let common = min(left.count, right.count)
            if common > 0 {
                let difference = memcmp(base + left.start, base + right.start, common)
                if difference != 0 { return difference < 0 }
            }
            return left.count < right.count
        }
    }
}
