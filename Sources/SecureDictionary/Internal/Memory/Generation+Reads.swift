/// What reads hand out: the caller's copies, built from the generation's region on demand,
/// and comparisons made in place.
///
/// ```swift
/// let token = generation.value(forKey: "apiToken")                  // a new String, the caller's
/// let same = generation.holds("refresh", identicalTo: expected)     // no copy made
/// ```
///
/// The blob was validated when the generation was made and nothing writes it afterwards, so
/// a read of it cannot fail but by a bug of the library's own: `try!` stops the program there.
extension Generation {
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
        let written = try! BlobView(region.bytes(0..<writer.finish()))
        return withExtendedLifetime(region) { try! view.holds(valueObject(entry), identicalTo: written.topObject, of: written) }
    }

    /// The change of the entry `key` from `old` to this generation, or `nil` when it is stored
    /// identically in both (or in neither). No other entry is read.
    func change(of key: String, since old: Generation) -> SecureDictionary.Change? {
        try! change(of: key, from: old.entry(forKey: key), in: old, to: entry(forKey: key))
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
            if let change = try! self.change(of: stored.string(), from: before, in: old, to: after) { changes.append(change) }
        }
        return changes
    }

    /// The change of `key` from entry `before` of `old` to entry `after` of this generation
    /// (`nil`: not there). The two values are compared in place, and decoded only when they
    /// differ: the listener's copies.
    private func change(of key: String, from before: Int?, in old: Generation, to after: Int?)
        throws(SecureDictionaryError) -> SecureDictionary.Change?
    {
        switch (before, after) {
        case (nil, nil):
            return nil
        case (let before?, nil):
            return .init(key: key, kind: .removed, oldValue: try old.view.value(of: old.valueObject(before)), newValue: nil)
        case (nil, let after?):
            return .init(key: key, kind: .inserted, oldValue: nil, newValue: try view.value(of: valueObject(after)))
        case (let before?, let after?):
            guard !(try view.holds(valueObject(after), identicalTo: old.valueObject(before), of: old.view)) else { return nil }
            return .init(
                key: key, kind: .updated, oldValue: try old.view.value(of: old.valueObject(before)),
                newValue: try view.value(of: valueObject(after)))
        }
    }
}
