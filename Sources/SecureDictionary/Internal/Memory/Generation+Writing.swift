import Logging

/// The write path's encoder: a stored generation plus the caller's changes, written into a new
/// region, in the one form the library stores (``BinaryPropertyListWriter``).
///
/// ```swift
/// let next = try Generation.writing(entries.overlay, onto: check.generation, limits: limits)
/// try store.store(next.bytes, …)            // then the cache becomes `next`
/// ```
///
/// Two passes over the root's entries, neither making a Swift value of a stored key or value:
/// 1. **Plan and count.** The stored keys (in the writer's order) and the changed keys (sorted)
///    are merged into the new root's entries. The census is the stored generation's, less the
///    entries replaced or removed (walking just those), plus the new values': the new blob's
///    size, so its region is allocated once.
/// 2. **Write.** Unchanged entries are copied object by object from the stored region
///    (``BinaryPropertyListWriter/copy(_:of:index:)``) and keep their hash; only the caller's
///    new values are encoded, and only new keys hashed.
///
/// The result is byte for byte what encoding the whole dictionary from its values gives
/// (`GenerationTests` compares them, on blobs of this writer and of others).
extension Generation {
    /// `base` (unless `overlay` drops it) with `overlay`'s changes, in a new generation.
    ///
    /// - Throws: ``SecureDictionaryError/tooLarge(size:limit:)`` when the result exceeds
    ///   `limits.maximumSize` (its region is wiped and freed), ``SecureDictionaryError/invalidValue(reason:)``
    ///   for a value the reader would reject (``Census/count(_:depth:maximumDepth:)``).
    static func writing(
        _ overlay: Overlay, onto base: Generation?, limits: PropertyListLimits, logger: Logger? = nil
    ) throws(SecureDictionaryError) -> Generation {
        let base = overlay.dropsStored ? nil : base
        let keys = BinaryPropertyListWriter.sortedKeys(overlay.edits.keys.lazy.map(\.text))
        let plan = try Plan(base: base, overlay: overlay, keys: keys, maximumDepth: limits.maximumDepth)
        let written = try Generation(
            writingWith: plan.census, count: plan.sources.count, logger: logger,
            hash: { entry in plan.sources[entry].stored.map { base!.hashTag($0) } }
        ) { writer throws(SecureDictionaryError) in
            let firstKey = writer.startContainer(0xD0, count: plan.sources.count, index: 0)
            let firstValue = firstKey + plan.sources.count
            for (entry, source) in plan.sources.enumerated() {
                switch source {
                case .stored(let stored): writer.copyString(try base!.key(stored), index: firstKey + entry)
                case .new(let position): writer.write(.string(overlay.edits.keys[position].text), index: firstKey + entry)
                }
            }
            for (entry, source) in plan.sources.enumerated() {
                switch source {
                case .stored(let stored):
                    try writer.copy(base!.valueObject(stored), of: base!.view, index: firstValue + entry)
                case .new(let position): writer.write(overlay.edits.values[position].value!, index: firstValue + entry)
                }
            }
        }
        guard written.size <= limits.maximumSize else { throw .tooLarge(size: written.size, limit: limits.maximumSize) }
        return written
    }

    /// The new root's entries, in the writer's order, and the census of the new blob.
    private struct Plan {
        enum Source {
            /// An entry of the stored generation, unchanged.
            case stored(Int)
            /// A changed key's new value, at this position of the overlay's edits.
            case new(Overlay.Edits.Index)

            var stored: Int? {
                if case .stored(let entry) = self { return entry }
                return nil
            }
        }

        var sources: [Source] = []
        var census: Census
        private var archiveKeys = (archiver: false, objects: false)
        /// Walks the stored entries replaced or removed, to count what goes (made on first need).
        private var dropped: BinaryPropertyListReader?

        /// Merges the stored entries (in the writer's order) with the changed keys (sorted).
        init(base: Generation?, overlay: Overlay, keys: [Overlay.Edits.Index], maximumDepth: Int) throws(SecureDictionaryError) {
            let stored = base?.count ?? 0
            census = base.map { $0.census - .container(count: stored, references: 2 * stored) } ?? Census()
            sources.reserveCapacity(stored + keys.count)
            var merge = SortedMerge(leftCount: stored, rightCount: keys.count)
            while let step = try merge.next(comparing: { (position, change) throws(SecureDictionaryError) in
                try base!.key(base!.entry(inOrder: position)).compare(to: overlay.edits.keys[keys[change]].text)
            }) {
                switch step {
                case .left(let position):  // an entry the changes leave alone
                    sources.append(.stored(base!.entry(inOrder: position)))
                    try base!.key(base!.entry(inOrder: position)).noteArchiveKey(in: &archiveKeys)
                case .right(let change):
                    try add(keys[change], of: overlay, maximumDepth: maximumDepth)
                case .both(let position, let change):
                    // Replaced or removed: its objects go.
                    let entry = base!.entry(inOrder: position)
                    dropped = dropped ?? BinaryPropertyListReader(base!.view, maximumDepth: .max)
                    try dropped!.validate(base!.keyObject(entry), depth: 2)
                    try dropped!.validate(base!.valueObject(entry), depth: 2)
                    try add(keys[change], of: overlay, maximumDepth: maximumDepth)
                }
            }
            if archiveKeys.archiver && archiveKeys.objects { throw Census.keyedArchive }
            census = census - (dropped?.census ?? Census()) + .container(count: sources.count, references: 2 * sources.count)
        }

        private mutating func add(_ edit: Overlay.Edits.Index, of overlay: Overlay, maximumDepth: Int)
            throws(SecureDictionaryError)
        {
            guard case .value(let value) = overlay.edits.values[edit] else { return }  // a removal
            let key = overlay.edits.keys[edit].text
            sources.append(.new(edit))
            try census.count(.string(key), depth: 2, maximumDepth: maximumDepth)
            try census.count(value, depth: 2, maximumDepth: maximumDepth)
            archiveKeys.archiver = archiveKeys.archiver || key.utf8.elementsEqual("$archiver".utf8)
            archiveKeys.objects = archiveKeys.objects || key.utf8.elementsEqual("$objects".utf8)
        }
    }
}
