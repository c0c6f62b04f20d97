/// What a stored blob was, in 16 bytes: its length and a keyed hash of its bytes.
///
/// What the check compares (``ItemState``), keeping no copy of the secret bytes. The hash is
/// Swift's `Hasher` (SipHash) keyed with a random seed per process, so another process cannot
/// craft a different blob with the same digest.
struct StoredDigest: Sendable, Equatable {
    private let count: Int
    private let hash: Int

    /// The digest of "no item".
    static let absent = StoredDigest(count: -1, hash: 0)
    /// After a write whose outcome is unknown: equal to no stored blob, so the next check
    /// decodes whatever it finds.
    static let unknown = StoredDigest(count: -2, hash: 0)
}

extension StoredDigest {
    init(of bytes: UnsafeRawBufferPointer) {
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        self.init(count: bytes.count, hash: hasher.finalize())
    }
}
