/// Validates one binary property list that may have been written by an attacker, without
/// making a value of it, and counts what the writer needs to copy it (its ``Census``).
///
/// ```swift
/// var reader = BinaryPropertyListReader(view, maximumDepth: 64)
/// try reader.validate(view.topObject, depth: 1)    // then read it in place: BlobView+Values
/// ```
///
/// Rules, each with its reason:
/// 1. Every read is bounds-checked against a trailer checked first (``BlobView``): no input can trap.
/// 2. A container may be referenced once in the whole tree (a second reference is corrupt): no
///    cycles, no exponential expansion, work bounded by the input's size. Scalars may be shared
///    (Apple's and Python's writers unique them).
/// 3. Containers deeper than the depth limit are rejected before their contents are read, so
///    recursion stays within the limit.
/// 4. Only what a ``PropertyListValue`` holds is accepted: null, fill, UIDs, sets, non-string or
///    duplicate keys (the same Unicode scalars) and keyed archives (`$archiver` with `$objects`)
///    are corrupt. Error reasons are fixed texts that never quote the input.
/// 5. No value is built (a `String` or `Data` made here would be freed unwiped): reads build the
///    caller's values from the validated blob later.
struct BinaryPropertyListReader {
    let view: BlobView
    let maximumDepth: Int
    /// The canonical form's census of everything validated so far.
    private(set) var census = Census()
    /// Per object: whether a container was seen there. Holds no input bytes.
    private var seen: [Bool]

    init(_ view: BlobView, maximumDepth: Int) {
        self.view = view
        self.maximumDepth = maximumDepth
        seen = [Bool](repeating: false, count: view.objectCount)
    }

    /// Validates object `index` (a container at nesting level `depth` if it is one) and adds
    /// what the writer writes for its tree to ``census``; returns a container's layout, a
    /// dictionary's in the writer's order (``keys(of:depth:)``).
    @discardableResult
    mutating func validate(_ index: Int, depth: Int) throws(SecureDictionaryError) -> BlobView.Container? {
        let offset = try view.objectOffset(index)
        let marker = view.byte(at: offset)
        switch marker & 0xF0 {
        case 0xA0, 0xD0:
            guard depth <= maximumDepth else {
                throw .corrupt(reason: "containers nest deeper than the depth limit")
            }
            guard !seen[index] else { throw .corrupt(reason: "a container is referenced more than once") }
            seen[index] = true
            var container = try view.container(index)
            let references = container.isDictionary ? 2 * container.count : container.count
            census = census + .container(count: container.count, references: references)
            if container.isDictionary {
                let keys = try view.keys(of: container, depth: depth)
                census.objects += container.count
                census.bytes += keys.bytes
                container.order = keys.order
            }
            for element in 0..<container.count {
                try validate(view.valueObject(element, of: container), depth: depth + 1)
            }
            return container
        case 0x40:
            let (count, _) = try view.countAndStart(marker: marker, offset: offset, unitSize: 1)
            census.bytes += Census.headerLength(count) + count
        case 0x50, 0x60:
            census.bytes += try view.string(marker: marker, offset: offset)!.canonicalLength
        default:
            // Numbers, dates and booleans: no secret bytes on the heap. Rejects the rest.
            census.bytes += Census.scalarLength(try view.scalar(marker: marker, offset: offset))
        }
        census.objects += 1
        return nil
    }
}

extension BlobView {
    /// The keys of a dictionary, checked: their order, `nil` when they ascend already (one
    /// comparison per key, the writer's own blobs), and the bytes the writer gives them.
    typealias Keys = (order: [Int]?, bytes: Int)

    /// Checks the keys of the dictionary `container` (at `depth`): strings, none twice, not a
    /// keyed archive's.
    func keys(of container: Container, depth: Int = 0) throws(SecureDictionaryError) -> Keys {
        var bytes = 0
        var previous: StoredString?
        var ascending = true
        var archiveKeys = (archiver: false, objects: false)
        for entry in 0..<container.count {
            let key = try string(keyObject(entry, of: container))
            bytes += key.canonicalLength
            key.noteArchiveKey(in: &archiveKeys)
            if let previous, ascending {
                let order = StoredString.compare(previous, key)
                if order == 0 { throw Self.duplicateKey(entry - 1, entry, depth: depth) }
                ascending = order < 0
            }
            previous = key
        }
        if archiveKeys.archiver && archiveKeys.objects { throw .corrupt(reason: "keyed archives are not supported") }
        guard !ascending else { return (nil, bytes) }
        // Not in the writer's order: sort (a blob another program wrote), then look for twins.
        let keys = try (0..<container.count).map { entry throws(SecureDictionaryError) in
            try string(keyObject(entry, of: container))
        }
        let order = keys.indices.sorted { StoredString.compare(keys[$0], keys[$1]) < 0 }
        for position in order.indices.dropFirst()
        where StoredString.compare(keys[order[position - 1]], keys[order[position]]) == 0 {
            let pair = (order[position - 1], order[position])
            throw Self.duplicateKey(min(pair.0, pair.1), max(pair.0, pair.1), depth: depth)
        }
        return (order, bytes)
    }

    private static func duplicateKey(_ earlier: Int, _ later: Int, depth: Int) -> SecureDictionaryError {
        .corrupt(
            reason: "duplicate key: entries \(earlier + 1) and \(later + 1) of a dictionary at depth \(depth) "
                + "have the same text (the same Unicode scalars)")
    }
}
