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
    /// grew would leave copies of keys behind) and wiped by ``wipe()``, then sorted most
    /// significant bytes first, 8 bytes at a time: a group of keys skips the prefix its
    /// members share (settings keys often share a long one, such as `com.example.`), is
    /// radix-sorted on the next 8 bytes as one big-endian integer (linear, no comparisons),
    /// and each run of keys equal in those bytes is sorted the same way from there. Small
    /// groups are compared with `memcmp` instead. No `String` comparison, no reference counting.
    struct SortedKeys<Keys: Collection<String>> {
        struct Key {
            var start: Int
            var count: Int
            var position: Keys.Index
        }

        var utf8: [UInt8] = []
        var order: [Key] = []

        /// Below this many keys, comparing beats a radix pass's fixed cost.
        fileprivate static var radixThreshold: Int { 64 }

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
                var sorter = Sorter(keys: found, base: utf8.baseAddress!)
                defer { sorter.wipe() }
                sorter.sort(0..<found.count, from: 0)
                return sorter.permutation.map { found[$0] }
            }
        }

        /// Wipes the keys' bytes.
        mutating func wipe() { Wipe.bytes(&utf8) }

        /// The sort itself, on a permutation of the keys.
        private struct Sorter {
            let keys: [Key]
            let base: UnsafePointer<UInt8>
            var permutation: [Int]
            /// Per key: the 8 bytes its group is being sorted on.
            var ranks: [UInt64]
            var scratch: [Int]

            init(keys: [Key], base: UnsafePointer<UInt8>) {
                self.keys = keys
                self.base = base
                permutation = Array(keys.indices)
                ranks = [UInt64](repeating: 0, count: keys.count)
                scratch = permutation
            }

            /// Sorts `permutation[group]`, whose keys all have the same first `offset` bytes.
            mutating func sort(_ group: Range<Int>, from offset: Int) {
                guard group.count > 1 else { return }
                if group.count < SortedKeys<Keys>.radixThreshold {
                    let (keys, base) = (keys, base)
                    permutation[group].sort { Self.precedes(keys[$0], keys[$1], base, from: offset) }
                    return
                }
                let offset = offset + sharedPrefix(group, from: offset)
                if group.allSatisfy({ keys[permutation[$0]].count <= offset }) {
                    // Every key ends here: equal so far, the shorter first (only lengths differ).
                    let keys = keys
                    permutation[group].sort { keys[$0].count < keys[$1].count }
                    return
                }
                for index in group {
                    ranks[permutation[index]] = rank(keys[permutation[index]], at: offset)
                }
                radixSort(group)
                var start = group.lowerBound
                while start < group.upperBound {
                    let rank = ranks[permutation[start]]
                    var end = start + 1
                    while end < group.upperBound, ranks[permutation[end]] == rank { end += 1 }
                    sort(start..<end, from: offset + 8)
                    start = end
                }
            }

            /// How many bytes from `offset` on every key of the group shares with the first.
            private func sharedPrefix(_ group: Range<Int>, from offset: Int) -> Int {
                let first = keys[permutation[group.lowerBound]]
                var shared = max(0, first.count - offset)
                for index in group.dropFirst() {
                    let key = keys[permutation[index]]
                    shared = min(shared, max(0, key.count - offset))
                    var length = 0
                    while length < shared, base[first.start + offset + length] == base[key.start + offset + length] {
                        length += 1
                    }
                    shared = length
                }
                return shared
            }

            /// Wipes the ranks: each holds 8 bytes of a key.
            mutating func wipe() {
                ranks.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) }
            }

            /// The key's 8 bytes from `offset`, big-endian, zero-padded past its end.
            private func rank(_ key: Key, at offset: Int) -> UInt64 {
                var rank: UInt64 = 0
                for index in offset..<(offset + 8) {
                    rank = rank << 8 | (index < key.count ? UInt64(base[key.start + index]) : 0)
                }
                return rank
            }

            /// Least-significant-byte-first radix sort of `permutation[group]` by rank, stable;
            /// a byte that is the same in every rank costs one counting pass and no moves.
            private mutating func radixSort(_ group: Range<Int>) {
                var counts = [Int](repeating: 0, count: 256)
                for shift in stride(from: UInt64(0), to: 64, by: 8) {
                    for bucket in counts.indices { counts[bucket] = 0 }
                    for index in group { counts[Int(truncatingIfNeeded: ranks[permutation[index]] >> shift) & 0xFF] += 1 }
                    if counts.contains(group.count) { continue }  // one bucket holds every key
                    var next = group.lowerBound
                    for bucket in counts.indices {
                        let count = counts[bucket]
                        counts[bucket] = next
                        next += count
                    }
                    for index in group {
                        let key = permutation[index]
                        let bucket = Int(truncatingIfNeeded: ranks[key] >> shift) & 0xFF
                        scratch[counts[bucket]] = key
                        counts[bucket] += 1
                    }
                    permutation[group] = scratch[group]
                }
            }

            /// The order itself, for two keys equal in their first `offset` bytes.
            static func precedes(_ left: Key, _ right: Key, _ base: UnsafePointer<UInt8>, from offset: Int) -> Bool {
                let common = min(left.count, right.count)
                if common > offset {
                    let difference = memcmp(base + left.start + offset, base + right.start + offset, common - offset)
                    if difference != 0 { return difference < 0 }
                }
                return left.count < right.count
            }
        }
    }
}
