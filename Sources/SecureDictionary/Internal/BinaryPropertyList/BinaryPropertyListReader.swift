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

    /// The root dictionary: its entry count, where its key references start (its value
    /// references follow them), and the writer's order of its entries (`nil`: as stored).
    typealias Root = (count: Int, references: Int, order: [Int]?)

    /// Validates object `index` (a container at nesting level `depth` if it is one) and adds
    /// what the writer writes for its tree to ``census``; a dictionary returns the writer's
    /// order of its entries (`nil`: as stored, ``BlobView/Keys``).
    @discardableResult
    mutating func validate(_ index: Int, depth: Int) throws(SecureDictionaryError) -> [Int]? {
        let offset = try view.objectOffset(index)
        let marker = view.byte(at: offset)
        switch marker & 0xF0 {
        case 0xA0, 0xD0:
            guard depth <= maximumDepth else {
                throw .corrupt(reason: "containers nest deeper than the depth limit")
            }
            guard !seen[index] else { throw .corrupt(reason: "a container is referenced more than once") }
            seen[index] = true
            let isDictionary = marker & 0xF0 == 0xD0
            let references = isDictionary ? 2 : 1
            let (count, start) = try view.countAndStart(marker: marker, offset: offset, unitSize: references * view.objectRefSize)
            census = census + .container(count: count, references: references * count)
            var order: [Int]?
            var values = start
            if isDictionary {
                let keys = try view.keys(count: count, references: start, depth: depth)
                census.objects += count
                census.bytes += keys.bytes
                order = keys.order
                values += count * view.objectRefSize
            }
            for element in 0..<count {
                try validate(view.reference(at: values + element * view.objectRefSize), depth: depth + 1)
            }
            return order
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

    /// Checks the `count` keys whose references start at `references` (of a dictionary at
    /// `depth`): strings, none twice, not a keyed archive's.
    func keys(count: Int, references: Int, depth: Int = 0) throws(SecureDictionaryError) -> Keys {
        var bytes = 0
        var previous: StoredString?
        var ascending = true
        var archiveKeys = (archiver: false, objects: false)
        for entry in 0..<count {
            let key = try string(reference(at: references + entry * objectRefSize))
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
        let keys = try (0..<count).map { entry throws(SecureDictionaryError) in
            try string(reference(at: references + entry * objectRefSize))
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
