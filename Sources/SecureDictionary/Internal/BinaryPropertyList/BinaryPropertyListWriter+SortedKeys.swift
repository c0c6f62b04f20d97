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
    /// The keys' bytes are copied once into `utf8` (the writer wipes it). Each key gets a
    /// rank: the 8 bytes just past the prefix all keys share (settings keys often share a
    /// long one, such as `com.example.`). Keys are sorted by rank with a radix sort (linear,
    /// no comparisons), and only keys of equal rank are then compared on the rest of their
    /// bytes with `memcmp`: no `String` comparison and no reference counting.
    struct SortedKeys {
        struct Key {
            var start: Int
            var count: Int
            var position: Dictionary<String, PropertyListValue>.Index
        }

        var utf8: [UInt8] = []
        var order: [Key] = []

        /// Below this many keys, a comparison sort beats the radix sort's fixed cost.
        private static let radixThreshold = 64

        init(_ entries: [String: PropertyListValue]) {
            var keys: [Key] = []
            keys.reserveCapacity(entries.count)
            for position in entries.indices {
                var key = entries.keys[position]
                let start = utf8.count
                key.withUTF8 { utf8.append(contentsOf: $0) }
                keys.append(Key(start: start, count: utf8.count - start, position: position))
            }
            guard keys.count > 1 else {
                order = keys
                return
            }
            order = utf8.withUnsafeBufferPointer { utf8 in
                let base = utf8.baseAddress!
                let ranked = Self.sharedPrefix(keys, base) + 8
                let ranks = keys.map { Self.rank($0, base, upTo: ranked) }
                var permutation = Array(0..<keys.count)
                if keys.count < Self.radixThreshold {
                    permutation.sort { Self.precedes(keys[$0], ranks[$0], keys[$1], ranks[$1], base, ranked) }
                } else {
                    Self.radixSort(&permutation, by: ranks)
                    Self.sortTies(&permutation, keys, ranks, base, ranked)
                }
                return permutation.map { keys[$0] }
            }
        }

        /// The length of the prefix every key shares with the first one.
        private static func sharedPrefix(_ keys: [Key], _ base: UnsafePointer<UInt8>) -> Int {
            var shared = keys[0].count
            for key in keys.dropFirst() {
                shared = min(shared, key.count)
                var index = 0
                while index < shared, base[keys[0].start + index] == base[key.start + index] { index += 1 }
                shared = index
            }
            return shared
        }

        /// The key's bytes from `end - 8` up to `end`, big-endian, zero-padded.
        private static func rank(_ key: Key, _ base: UnsafePointer<UInt8>, upTo end: Int) -> UInt64 {
            var rank: UInt64 = 0
            for index in (end - 8)..<end {
                rank = rank << 8 | (index < key.count ? UInt64(base[key.start + index]) : 0)
            }
            return rank
        }

        /// The order itself: rank first, then the bytes past the rank, then the length.
        private static func precedes(
            _ left: Key, _ leftRank: UInt64, _ right: Key, _ rightRank: UInt64, _ base: UnsafePointer<UInt8>,
            _ ranked: Int
        ) -> Bool {
            if leftRank != rightRank { return leftRank < rightRank }
            let common = min(left.count, right.count)
            if common > ranked {
                let difference = memcmp(base + left.start + ranked, base + right.start + ranked, common - ranked)
                if difference != 0 { return difference < 0 }
            }
            return left.count < right.count
        }

        /// Least-significant-byte-first radix sort of `permutation` by `ranks`, stable; a
        /// byte that is the same in every rank costs one counting pass and no moves.
        private static func radixSort(_ permutation: inout [Int], by ranks: [UInt64]) {
            var scratch = permutation
            var counts = [Int](repeating: 0, count: 256)
            for shift in stride(from: 0, to: 64, by: 8) {
                for bucket in counts.indices { counts[bucket] = 0 }
                for index in permutation { counts[Int(truncatingIfNeeded: ranks[index] >> UInt64(shift)) & 0xFF] += 1 }
                if counts.contains(permutation.count) { continue }  // one bucket holds every key
                var next = 0
                for bucket in counts.indices {
                    let count = counts[bucket]
                    counts[bucket] = next
                    next += count
                }
                for index in permutation {
                    let bucket = Int(truncatingIfNeeded: ranks[index] >> UInt64(shift)) & 0xFF
                    scratch[counts[bucket]] = index
                    counts[bucket] += 1
                }
                swap(&permutation, &scratch)
            }
        }

        /// Orders each run of keys that share a rank by the rest of their bytes.
        private static func sortTies(
            _ permutation: inout [Int], _ keys: [Key], _ ranks: [UInt64], _ base: UnsafePointer<UInt8>, _ ranked: Int
        ) {
            var start = 0
            while start < permutation.count {
                var end = start + 1
                while end < permutation.count, ranks[permutation[end]] == ranks[permutation[start]] { end += 1 }
                if end - start > 1 {
                    permutation[start..<end].sort { Self.precedes(keys[$0], ranks[$0], keys[$1], ranks[$1], base, ranked) }
                }
                start = end
            }
        }
    }
}
