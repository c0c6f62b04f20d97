/// What a stored blob was, in 16 bytes: its length and a keyed hash of its bytes.
///
/// A writer compares the digest of the blob it finds in the keyring with the digest of the
/// blob it last loaded or wrote: equal means nobody changed the item, so the cache is
/// current and the blob need not be decoded again. The hash is Swift's `Hasher` (SipHash),
/// keyed with a random seed per process, so another process cannot craft a different blob
/// with the same digest. No copy of the secret bytes is kept for the comparison.
struct StoredDigest: Sendable, Equatable {
    private let count: Int
    private let hash: Int

    /// The digest of "no item".
    static let absent = StoredDigest(count: -1, hash: 0)
    /// After a write whose outcome is unknown: equal to no stored blob, so the next check
    /// decodes whatever it finds.
    static let unknown = StoredDigest(count: -2, hash: 0)

    private init(count: Int, hash: Int) {
        self.count = count
        self.hash = hash
    }

    init(of bytes: [UInt8]) {
        self = bytes.withUnsafeBytes { StoredDigest(of: $0) }
    }

    init(of bytes: UnsafeRawBufferPointer) {
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        self.init(count: bytes.count, hash: hasher.finalize())
    }
}
