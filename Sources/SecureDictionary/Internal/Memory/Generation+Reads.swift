/// What reads hand out: the caller's copies, built from the generation's region on demand,
/// and comparisons made in place.
///
/// ```swift
/// let token = generation.value(forKey: "apiToken")                  // a new String, the caller's
/// let same = generation.holds("refresh", identicalTo: expected)     // no copy made
/// ```
extension Generation {
    /// The caller's copy of the value of `key` (the same Unicode scalars), if any.
    func value(forKey key: String) -> PropertyListValue? {
        guard let entry = entry(forKey: key) else { return nil }
        return Self.trusted { () throws(BinaryPropertyListError) in try view.value(of: valueObject(entry)) }
    }

    func contains(_ key: String) -> Bool { entry(forKey: key) != nil }

    /// The caller's copies of the keys, in the stored order.
    var keys: [String] {
        Self.trusted { () throws(BinaryPropertyListError) in
            var keys: [String] = []
            keys.reserveCapacity(count)
            for entry in 0..<count { keys.append(try key(entry).string()) }
            return keys
        }
    }

    /// The caller's copy of every entry. Keys canonically equivalent but of other scalars
    /// (`é` as U+00E9 and as `e` + U+0301) are one key to a Swift dictionary: it holds one
    /// of them, as ``BlobView/entries(of:)`` says.
    func dictionary() -> [String: PropertyListValue] {
        Self.trusted { () throws(BinaryPropertyListError) in try view.entries(of: view.topObject) }
    }

    /// Whether `key` holds a value stored identically to `value` (`nil`: whether there is no
    /// such entry), compared in place: strings by their scalars, reals and dates by their bits.
    func holds(_ key: String, identicalTo value: PropertyListValue?) -> Bool {
        guard let entry = entry(forKey: key) else { return value == nil }
        guard let value else { return false }
        return Self.trusted { () throws(BinaryPropertyListError) in try view.holds(valueObject(entry), identicalTo: value) }
    }

    /// The per-key changes from `old` to this generation, in key order. Entries are compared
    /// in place, and only those that changed are decoded: each listener's copies.
    func changes(since old: Generation) -> [SecureDictionary.Change] {
        guard old !== self else { return [] }
        return Self.trusted { () throws(BinaryPropertyListError) in
            var changes: [SecureDictionary.Change] = []
            var merge = SortedMerge(leftCount: old.count, rightCount: count)
            while let step = try merge.next(comparing: { (before, after) throws(BinaryPropertyListError) in
                StoredString.compare(try old.key(old.entry(inOrder: before)), try key(entry(inOrder: after)))
            }) {
                switch step {
                case .left(let before):
                    let oldEntry = old.entry(inOrder: before)
                    changes.append(
                        .init(
                            key: try old.key(oldEntry).string(), kind: .removed,
                            oldValue: try old.view.value(of: old.valueObject(oldEntry)),
                            newValue: nil))
                case .right(let after):
                    let newEntry = entry(inOrder: after)
                    changes.append(
                        .init(
                            key: try key(newEntry).string(), kind: .inserted, oldValue: nil,
                            newValue: try view.value(of: valueObject(newEntry))))
                case .both(let before, let after):
                    let (oldEntry, newEntry) = (old.entry(inOrder: before), entry(inOrder: after))
                    guard !(try view.holds(valueObject(newEntry), identicalTo: old.valueObject(oldEntry), of: old.view)) else {
                        continue
                    }
                    changes.append(
                        .init(
                            key: try key(newEntry).string(), kind: .updated,
                            oldValue: try old.view.value(of: old.valueObject(oldEntry)),
                            newValue: try view.value(of: valueObject(newEntry))))
                }
            }
            return changes
        }
    }
}
