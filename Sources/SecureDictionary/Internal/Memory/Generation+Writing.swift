import Logging

/// The write path's encoder: a stored generation plus the caller's changes, written into a new
/// region in the one form the library stores (``BinaryPropertyListWriter``).
///
/// ```swift
/// let next = try Generation.writing(entries.overlay, onto: check.generation, limits: limits)
/// try store.store(next.bytes, …)            // then the cache becomes `next`
/// ```
///
/// Two passes over the root's entries, neither making a Swift value of a stored key or value:
/// 1. **Plan and count** (``plan(_:onto:maximumDepth:)``): the census is the stored
///    generation's, less the entries replaced or removed, plus the new values': the new blob's
///    size, so its region is allocated once.
/// 2. **Write.** Unchanged entries are copied object by object (and keep their hash); only the
///    caller's new values are encoded, and only new keys hashed.
///
/// The result is byte for byte what encoding the whole dictionary gives (`GenerationTests`
/// compares them, on blobs of this writer and of others).
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
        let (sources, census) = try plan(overlay, onto: base, maximumDepth: limits.maximumDepth)
        let written = try Generation(
            writingWith: census, count: sources.count, logger: logger,
            hash: { entry in if case .stored(let stored) = sources[entry] { base!.hashTag(stored) } else { nil } }
        ) { writer throws(SecureDictionaryError) in
            let firstKey = writer.startContainer(0xD0, count: sources.count, index: 0)
            let firstValue = firstKey + sources.count
            for (entry, source) in sources.enumerated() {
                switch source {
                case .stored(let stored): writer.copyString(try base!.key(stored), index: firstKey + entry)
                case .new(let position): writer.write(.string(overlay.edits.keys[position].text), index: firstKey + entry)
                }
            }
            for (entry, source) in sources.enumerated() {
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

    /// An entry of the new root.
    private enum Source {
        /// An entry of the stored generation, unchanged.
        case stored(Int)
        /// A changed key's new value, at this position of the overlay's edits.
        case new(Overlay.Edits.Index)
    }

    /// The new root's entries in the writer's order, the stored ones (in that order) merged with
    /// the changed keys (sorted), and the census of the new blob.
    private static func plan(_ overlay: Overlay, onto base: Generation?, maximumDepth: Int) throws(SecureDictionaryError)
        -> (sources: [Source], census: Census)
    {
        let keys = BinaryPropertyListWriter.sortedKeys(overlay.edits.keys.lazy.map(\.text))
        let stored = base?.count ?? 0
        var census = base.map { $0.census - .container(count: stored, references: 2 * stored) } ?? Census()
        var sources: [Source] = []
        sources.reserveCapacity(stored + keys.count)
        // Walks the stored entries replaced or removed, to count what goes (made on first need).
        var dropped: BinaryPropertyListReader?
        var merge = SortedMerge(leftCount: stored, rightCount: keys.count)
        while let step = try merge.next(comparing: { (position, change) throws(SecureDictionaryError) in
            try base!.key(base!.entry(inOrder: position)).compare(to: overlay.edits.keys[keys[change]].text)
        }) {
            if let position = step.left, step.right == nil {  // an entry the changes leave alone
                sources.append(.stored(base!.entry(inOrder: position)))
            } else if let position = step.left {  // replaced or removed: its objects go
                let entry = base!.entry(inOrder: position)
                dropped = dropped ?? BinaryPropertyListReader(base!.view, maximumDepth: .max)
                try dropped!.validate(base!.keyObject(entry), depth: 2)
                try dropped!.validate(base!.valueObject(entry), depth: 2)
            }
            if let change = step.right, case .value(let value) = overlay.edits.values[keys[change]] {
                sources.append(.new(keys[change]))
                try census.count(.string(overlay.edits.keys[keys[change]].text), depth: 2, maximumDepth: maximumDepth)
                try census.count(value, depth: 2, maximumDepth: maximumDepth)
            }
        }
        // Both keys in the new root read as a keyed archive.
        func kept(_ key: String) -> Bool { overlay.edit(of: key).map { $0.value != nil } ?? base?.contains(key) ?? false }
        if kept("$archiver") && kept("$objects") { throw Census.keyedArchive }
        census = census - (dropped?.census ?? Census()) + .container(count: sources.count, references: 2 * sources.count)
        return (sources, census)
    }
}
