import Logging

/// One loaded generation of an item: the stored blob, byte for byte, in a ``SecureRegion``,
/// with an index of its top-level keys; all the library keeps of a dictionary. Reads build the
/// caller's copies from it, observers compare two in place; writes copy its objects into the
/// next generation's region (Generation+Writing.swift).
///
/// ```swift
/// let generation = try Generation(copying: bytes, limits: limits)   // validated as hostile input
/// let token = generation.value(forKey: "apiToken")                   // the caller's copy
/// let same = generation.holds("refresh", identicalTo: expected)       // no copy made
/// ```
///
/// The region: the blob, then per entry the low 32 bits of its key's hash (keyed per process,
/// ``StoredString/hashValue``), then an open-addressed table (linear probing, at most half
/// full) of entry numbers + 1 (0: empty), entries numbered as the root stores them. Immutable
/// once made; wiped when no state, read or observer holds it. A read of it cannot fail but by
/// a bug of the library's own (it was validated when made): `try!` stops the program there.
final class Generation: @unchecked Sendable {  // every property is a let; the region is written in init only
    let region: SecureRegion
    let view: BlobView
    /// The blob's size in bytes.
    let size: Int
    /// The root dictionary, with the writer's order of its entries.
    private let root: BlobView.Container
    /// What the writer writes for this whole tree (for the next generation's census).
    let census: Census
    private let hashes: UnsafeMutablePointer<UInt32>
    private let slots: UnsafeMutablePointer<UInt32>
    private let slotMask: Int

    /// The generation of an item that does not exist: an empty dictionary.
    static let empty = try! Generation.writing(Overlay(), onto: nil, limits: .default)

    /// A generation holding a copy of the stored blob `bytes`, validated where they are first
    /// (``BinaryPropertyList/validate(_:limits:)``), so a hostile blob's claims never size the region.
    ///
    /// - Throws: ``SecureDictionaryError/tooLarge(size:limit:)``, ``SecureDictionaryError/corrupt(reason:)``,
    ///   ``SecureDictionaryError/unsupportedFormatVersion(_:)``.
    convenience init(copying bytes: UnsafeRawBufferPointer, limits: PropertyListLimits, logger: Logger? = nil)
        throws(SecureDictionaryError)
    {
        let (root, census) = try BinaryPropertyList.validate(bytes, limits: limits)
        let region = SecureRegion(byteCount: Self.layout(blob: bytes.count, entries: root.count).size, logger: logger)
        region.base.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        let view = try BlobView(region.bytes(bytes.count))  // the same bytes, now the library's
        try self.init(region: region, view: view, size: bytes.count, root: root, census: census, hash: nil)
    }

    /// A generation written by `write` into a region sized from `census` (its root holding
    /// `count` entries), keys hashed by `hash` (entry number → hash, `nil` to compute it).
    convenience init(
        writingWith census: Census, count: Int, logger: Logger?, hash: ((Int) -> UInt32?)?,
        _ write: (inout BinaryPropertyListWriter) throws(SecureDictionaryError) -> Void
    ) throws(SecureDictionaryError) {
        let capacity = BinaryPropertyListWriter.size(of: census)
        let region = SecureRegion(byteCount: Self.layout(blob: capacity, entries: count).size, logger: logger)
        var writer = BinaryPropertyListWriter(into: region.base, census: census)
        try write(&writer)
        let size = writer.finish()
        let view = try BlobView(region.bytes(size))
        let root = try view.container(view.topObject)
        precondition(root.count == count, "the root was written with another entry count than planned")
        try self.init(region: region, view: view, size: size, root: root, census: census, hash: hash, blobCapacity: capacity)
    }

    private init(
        region: SecureRegion, view: BlobView, size: Int, root: BlobView.Container, census: Census,
        hash: ((Int) -> UInt32?)?, blobCapacity: Int? = nil
    ) throws(SecureDictionaryError) {
        self.region = region
        self.view = view
        self.size = size
        self.root = root
        self.census = census
        let (hashesAt, slotsAt, slotCount, _) = Self.layout(blob: blobCapacity ?? size, entries: root.count)
        hashes = (region.base + hashesAt).bindMemory(to: UInt32.self, capacity: max(root.count, 1))
        slots = (region.base + slotsAt).bindMemory(to: UInt32.self, capacity: slotCount)
        slotMask = slotCount - 1
        for entry in 0..<root.count {
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

    /// Entries of the root dictionary.
    var count: Int { root.count }

    func key(_ entry: Int) throws(SecureDictionaryError) -> StoredString { try view.string(keyObject(entry)) }

    func keyObject(_ entry: Int) throws(SecureDictionaryError) -> Int { try view.keyObject(entry, of: root) }

    func valueObject(_ entry: Int) throws(SecureDictionaryError) -> Int { try view.valueObject(entry, of: root) }

    func hashTag(_ entry: Int) -> UInt32 { hashes[entry] }

    /// ``BlobView/Container/entry(inOrder:)`` of the root.
    func entry(inOrder position: Int) -> Int { root.entry(inOrder: position) }

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
    var bytes: UnsafeRawBufferPointer { region.bytes(size) }

    // MARK: Reads

    /// The caller's copy of the value of `key` (the same Unicode scalars), if any.
    func value(forKey key: String) -> PropertyListValue? { entry(forKey: key).map(value(of:)) }

    /// The caller's copy of the value of `entry` (from ``entry(forKey:)``).
    func value(of entry: Int) -> PropertyListValue { try! view.value(of: valueObject(entry)) }

    func contains(_ key: String) -> Bool { entry(forKey: key) != nil }

    /// The caller's copies of the keys, in the stored order.
    var keys: [String] { (0..<count).map { entry in try! key(entry).string() } }

    /// The caller's copy of every entry (of canonically equivalent keys, one: ``BlobView/entries(of:)``).
    func dictionary() -> [String: PropertyListValue] { try! view.entries(of: view.topObject) }

    /// Whether `key` holds a value stored identically to `value` (`nil`: no such entry), as
    /// ``BlobView/holds(_:identicalTo:of:)`` tells them apart. `value` is written in the stored
    /// form into a ``SecureRegion`` of its own and compared there, so neither side reaches
    /// ordinary memory. A value the writer refuses is held nowhere.
    func holds(_ key: String, identicalTo value: PropertyListValue?) -> Bool {
        guard let entry = entry(forKey: key) else { return value == nil }
        var census = Census()
        guard let value, (try? census.count(value, depth: 1, maximumDepth: .max)) != nil else { return false }
        let region = SecureRegion(byteCount: BinaryPropertyListWriter.size(of: census))
        var writer = BinaryPropertyListWriter(into: region.base, census: census)
        writer.write(value, index: 0)
        let written = try! BlobView(region.bytes(writer.finish()))
        return withExtendedLifetime(region) { try! view.holds(valueObject(entry), identicalTo: written.topObject, of: written) }
    }

    /// The change of the entry `key` from `old` to this generation, or `nil` when it is stored
    /// identically in both (or in neither). No other entry is read.
    func change(of key: String, since old: Generation) -> SecureDictionary.Change? {
        change(of: key, from: old.entry(forKey: key), in: old, to: entry(forKey: key))
    }

    /// The per-key changes from `old` to this generation, in key order.
    func changes(since old: Generation) -> [SecureDictionary.Change] {
        guard old !== self else { return [] }
        var changes: [SecureDictionary.Change] = []
        var merge = SortedMerge(leftCount: old.count, rightCount: count)
        while let step = try! merge.next(comparing: { (before, after) throws(SecureDictionaryError) in
            StoredString.compare(try old.key(old.entry(inOrder: before)), try key(entry(inOrder: after)))
        }) {
            let (before, after) = (step.left.map(old.entry(inOrder:)), step.right.map(entry(inOrder:)))
            let stored = try! after.map(key) ?? old.key(before!)
            if let change = self.change(of: stored.string(), from: before, in: old, to: after) { changes.append(change) }
        }
        return changes
    }

    /// The change of `key` from entry `before` of `old` to entry `after` of this generation
    /// (`nil`: not there). The two values are compared in place, and decoded only when they
    /// differ: the listener's copies.
    private func change(of key: String, from before: Int?, in old: Generation, to after: Int?) -> SecureDictionary.Change? {
        switch (before, after) {
        case (nil, nil):
            return nil
        case (let before?, nil):
            return .init(key: key, kind: .removed, oldValue: old.value(of: before), newValue: nil)
        case (nil, let after?):
            return .init(key: key, kind: .inserted, oldValue: nil, newValue: value(of: after))
        case (let before?, let after?):
            guard !(try! view.holds(valueObject(after), identicalTo: old.valueObject(before), of: old.view)) else { return nil }
            return .init(key: key, kind: .updated, oldValue: old.value(of: before), newValue: value(of: after))
        }
    }
}
