import Logging

/// One loaded generation of an item: the stored blob, byte for byte, in a ``SecureRegion``,
/// with an index of its top-level keys; all the library keeps of a dictionary. Reads build the
/// caller's copy from it and observers compare two (Generation+Reads.swift); writes copy its
/// objects into the next generation's region (Generation+Writing.swift).
///
/// ```swift
/// let generation = try Generation(copying: bytes, limits: limits)   // validated as hostile input
/// let token = generation.value(forKey: "apiToken")                   // the caller's copy
/// ```
///
/// The region: the blob, then per entry the low 32 bits of its key's hash (keyed per process,
/// ``StoredString/hashValue``), then an open-addressed table (linear probing, at most half
/// full) of entry numbers + 1 (0: empty), entries numbered as the root stores them. Immutable
/// once made; wiped when no state, read or observer holds it.
final class Generation: @unchecked Sendable {  // every property is a let; the region is written in init only
    let region: SecureRegion
    let view: BlobView
    /// The blob's size in bytes.
    let size: Int
    /// Entries of the root dictionary.
    let count: Int
    /// What the writer writes for this whole tree (for the next generation's census).
    let census: Census
    /// Where the root's key references start; its value references follow them.
    private let references: Int
    /// The writer's order of the root's entries: `nil` when they ascend as stored.
    private let order: [Int]?
    private let hashes: UnsafeMutablePointer<UInt32>
    private let slots: UnsafeMutablePointer<UInt32>
    private let slotMask: Int

    /// The generation of an item that does not exist: an empty dictionary.
    static let empty = try! Generation(writingWith: .container(count: 0, references: 0), count: 0, logger: nil) { writer in
        _ = writer.startContainer(0xD0, count: 0, index: 0)
    }

    /// A generation holding a copy of the stored blob `bytes`, validated where they are first
    /// (``BinaryPropertyList/validate(_:limits:)``), so a hostile blob's claims never size the region.
    ///
    /// - Throws: ``SecureDictionaryError/tooLarge(size:limit:)``, ``SecureDictionaryError/corrupt(reason:)``,
    ///   ``SecureDictionaryError/unsupportedFormatVersion(_:)``.
    convenience init(copying bytes: UnsafeRawBufferPointer, limits: PropertyListLimits, logger: Logger? = nil)
        throws(SecureDictionaryError)
    {
        let (validated, census) = try BinaryPropertyList.validate(bytes, limits: limits)
        let region = SecureRegion(byteCount: Self.layout(blob: bytes.count, entries: validated.count).size, logger: logger)
        region.base.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        let view = try BlobView(region.bytes(0..<bytes.count))  // the same bytes, now the library's
        try self.init(region: region, view: view, size: bytes.count, root: validated, census: census, hash: nil)
    }

    /// A generation written by `write` into a region sized from `census` (its root holding
    /// `count` entries), keys hashed by `hash` (entry number → hash, `nil` to compute it).
    convenience init(
        writingWith census: Census, count: Int, logger: Logger?, hash: ((Int) -> UInt32?)? = nil,
        _ write: (inout BinaryPropertyListWriter) throws(SecureDictionaryError) -> Void
    ) throws(SecureDictionaryError) {
        let capacity = BinaryPropertyListWriter.size(of: census)
        let region = SecureRegion(byteCount: Self.layout(blob: capacity, entries: count).size, logger: logger)
        var writer = BinaryPropertyListWriter(into: region.base, census: census)
        try write(&writer)
        let size = writer.finish()
        let view = try BlobView(region.bytes(0..<size))
        let (root, references) = try view.container(view.topObject)
        precondition(root == count, "the root was written with another entry count than planned")
        try self.init(
            region: region, view: view, size: size, root: (count, references, nil), census: census, hash: hash,
            blobCapacity: capacity)
    }

    private init(
        region: SecureRegion, view: BlobView, size: Int, root: BinaryPropertyListReader.Root, census: Census,
        hash: ((Int) -> UInt32?)?, blobCapacity: Int? = nil
    ) throws(SecureDictionaryError) {
        self.region = region
        self.view = view
        self.size = size
        count = root.count
        self.census = census
        references = root.references
        order = root.order
        let (hashesAt, slotsAt, slotCount, _) = Self.layout(blob: blobCapacity ?? size, entries: count)
        hashes = (region.base + hashesAt).bindMemory(to: UInt32.self, capacity: max(count, 1))
        slots = (region.base + slotsAt).bindMemory(to: UInt32.self, capacity: slotCount)
        slotMask = slotCount - 1
        for entry in 0..<count {
            var tag: UInt32
            if let known = hash?(entry) { tag = known } else { tag = UInt32(truncatingIfNeeded: try key(entry).hashValue) }
            hashes[entry] = tag
            var slot = Int(tag) & slotMask
            while slots[slot] != 0 { slot = (slot + 1) & slotMask }
            slots[slot] = UInt32(entry + 1)
        }
    }

    /// For a blob of `blob` bytes whose root holds `entries` entries: where the hashes and the
    /// slots start, how many slots (a power of two, at least twice the entries), the region's size.
    private static func layout(blob: Int, entries: Int) -> (hashes: Int, slots: Int, slotCount: Int, size: Int) {
        let hashes = (blob + 7) & ~7
        var slotCount = 8
        while slotCount < 2 * entries { slotCount <<= 1 }
        return (hashes, hashes + 4 * entries, slotCount, hashes + 4 * entries + 4 * slotCount)
    }

    // MARK: Entries

    func key(_ entry: Int) throws(SecureDictionaryError) -> StoredString { try view.string(keyObject(entry)) }

    func valueObject(_ entry: Int) throws(SecureDictionaryError) -> Int {
        try view.reference(at: references + (count + entry) * view.objectRefSize)
    }

    func keyObject(_ entry: Int) throws(SecureDictionaryError) -> Int {
        try view.reference(at: references + entry * view.objectRefSize)
    }

    func hashTag(_ entry: Int) -> UInt32 { hashes[entry] }

    /// The entry at `position` in the writer's order (by the keys' UTF-8 bytes).
    func entry(inOrder position: Int) -> Int { order?[position] ?? position }

    /// The entry whose key is `key` (the same Unicode scalars), if any.
    func entry(forKey key: String) -> Int? {
        let tag = UInt32(truncatingIfNeeded: StoredString.hashValue(key))
        var slot = Int(tag) & slotMask
        while true {
            let stored = slots[slot]
            guard stored != 0 else { return nil }
            let entry = Int(stored) - 1
            if hashes[entry] == tag, try! self.key(entry).compare(to: key) == 0 {
                return entry
            }
            slot = (slot + 1) & slotMask
        }
    }

    /// The bytes of the blob, as stored.
    var bytes: UnsafeRawBufferPointer { region.bytes(0..<size) }
}
