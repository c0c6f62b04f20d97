import FoundationEssentials
public import SecureDictionary

extension SecureDictionary {
    /// What to do when an adopted item's key is already in the dictionary with another value,
    /// or two items map to one key.
    public enum AdoptionConflictPolicy: Sendable, Equatable {
        /// Report the conflicts and change nothing at all (the default).
        case stop
        /// Keep the dictionary's value; the item is left where it is.
        case keepDictionary
        /// Take the item's value. (Two items with one key stay a conflict: no value is right.)
        case takeItem
    }

    /// What happens to the items once the dictionary holds their secrets, read back.
    public enum AdoptionRetirement: Sendable, Equatable {
        /// Leave them, so that an older version of the application still finds them.
        case keep
        /// Remove each one, verified: only while it still holds the secret adopted.
        case delete
    }

    /// Moves secrets that another library or tool keeps as one keyring item per key into
    /// the dictionary `name`, safely: a dry run first if you like, then the dictionary is
    /// written and read back, and only then are the items retired, one by one, each verified.
    ///
    /// ```swift
    /// let report = try SecureDictionary.adopt(.pythonKeyring(service: "my-app"), into: "tokens", retire: .delete)
    /// print(report)   // counts only: adopted, already there, conflicts, retired
    /// ```
    ///
    /// A secret becomes a string when its bytes are UTF-8, data otherwise. Killed at any
    /// point, nothing is lost: each secret is in its item, in the dictionary or in both, and
    /// running the same adoption again finishes the job (an entry already holding the item's
    /// value counts as adopted). Two items whose keys are one text in two Unicode forms (NFC,
    /// NFD) are conflicts, never one entry. Items the keyring asks its user about (KeePassXC's
    /// access confirmation) are reported and left alone. The other library takes no writer
    /// lock: should it change an item in the one call between its check and its removal, that
    /// change is lost; an item found changed is kept and reported. Two adoptions of the same
    /// items at once both finish; on KeePassXC run one at a time: two clients deleting items
    /// at once can crash it (2.7.4 and 2.7.10, see PROVIDERS.md).
    ///
    /// - Parameters:
    ///   - items: which items, and the attribute that names each one's key.
    ///   - name: the dictionary's name; `nil` for the application's default dictionary.
    ///   - applicationID: the dictionary's application (default: `SecureDictionary.defaultApplicationID`).
    ///   - options: the store (which also holds the items), collection and deadline.
    ///   - policy: what a key already holding another value means (default: stop).
    ///   - retirement: keep the items (default) or delete them once adopted.
    ///   - dryRun: only say what would be written and retired.
    ///
    /// - Returns: the report; with conflicts and ``AdoptionConflictPolicy/stop``, nothing was
    ///   changed and ``AdoptionReport/changedNothing`` is `true`. When no item matches, its
    ///   ``AdoptionReport/items`` are empty and nothing was written (no dictionary is created).
    /// - Throws: `SecureDictionaryError.locked` and what reading the items or writing the
    ///   dictionary throws; ``AdoptionError/storeHoldsNoItems(operation:)`` when the
    ///   store keeps no per-key items (the Secret Service's store does).
    @discardableResult
    public static func adopt(
        _ items: ForeignItems, into name: String?, applicationID: String = SecureDictionary.defaultApplicationID,
        options: Options = Options(), conflicts policy: AdoptionConflictPolicy = .stop,
        retire retirement: AdoptionRetirement = .keep, dryRun: Bool = false
    ) throws(SecureDictionaryError) -> AdoptionReport {
        guard let store = options.store as? any ForeignItemStore else { throw .storeHoldsNoItems(operation: "adopt") }
        var report = AdoptionReport(dryRun: dryRun)
        var found = try Adoption.read(items, from: store, timeout: options.timeout, into: &report)
        // Nothing to adopt (a mistyped service, say): no dictionary is created.
        if found.isEmpty { return report }
        let dictionary = try SecureDictionary(name: name, applicationID: applicationID, options: options)
        Adoption.step("read")
        if dryRun {
            Adoption.plan(&found, against: try dictionary.currentEntries(), policy: policy, into: &report)
            return report
        }
        guard try Adoption.write(&found, into: dictionary, policy: policy, report: &report) else {
            report.changedNothing = true
            return report
        }
        Adoption.step("written")
        try Adoption.verify(found, in: dictionary)
        Adoption.step("verified")
        if retirement == .delete {
            try Adoption.retire(found, from: store, items: items, timeout: options.timeout, report: &report)
        }
        return report
    }
}

extension SecureDictionary {
    /// Where the items `items` names are, from their attributes alone (no secret is read),
    /// for `secure-dict list` to point out what could be adopted.
    package static func foreignItemPaths(_ items: ForeignItems, options: Options) throws(SecureDictionaryError) -> Set<String> {
        guard let store = options.store as? any ForeignItemStore else { return [] }
        return Set(try store.foreignItems(matching: items.attributes, in: items.collection, timeout: options.timeout).map(\.path))
    }

    /// The attributes of the items that have `attributes` (no secret is read), for
    /// `secure-dict adopt` to name the services that exist when the one given matched nothing.
    package static func foreignItemAttributes(
        matching attributes: [String: String], in collection: KeyringCollection, options: Options
    ) throws(SecureDictionaryError) -> [[String: String]] {
        guard let store = options.store as? any ForeignItemStore else { return [] }
        return try store.foreignItems(matching: attributes, in: collection, timeout: options.timeout)
            .map(\.attributes).filter { $0["xdg:schema"] != KeyringItem.schemaName }
    }
}

/// What an adoption did (or, in a dry run, would do), item by item. Its `description` gives
/// counts only: keys come from attributes, which are not secret, but need not be printed.
public struct AdoptionReport: Sendable, CustomStringConvertible {
    /// What became of one item.
    public enum Outcome: Sendable, Equatable {
        /// Its secret is (or, in a dry run, would be) written under `key`.
        case adopted
        /// The dictionary already held its value under its key (an earlier run).
        case alreadyAdopted
        /// Not adopted: the key holds another value, two items map to it, or the item has no
        /// key attribute or an empty one.
        case conflict(reason: String)
        /// Not adopted: the keyring asks its user before this client may read the item.
        case needsConfirmation
    }

    /// What became of one item once adopted.
    public enum Retirement: Sendable, Equatable {
        /// Left where it is (``SecureDictionary/SecureDictionary/AdoptionRetirement/keep``, a
        /// dry run, or not adopted).
        case kept
        /// Removed, after the dictionary was read back holding its value and the item still
        /// held the secret adopted.
        case deleted
        /// It changed after it was adopted (another program wrote it): kept, and its new
        /// value is not in the dictionary.
        case changedSinceAdopted
        /// It was gone when its turn came (another run of the same adoption, or another
        /// program, removed it after it was adopted): its value is in the dictionary.
        case alreadyGone
    }

    /// One item: its key (`nil` when it has none), what happened to it, and to the item.
    public struct Item: Sendable, Equatable {
        /// Its key in the dictionary: its key attribute's value.
        public let key: String?
        /// What became of its secret.
        public internal(set) var outcome: Outcome
        /// What became of the item itself.
        public internal(set) var retirement: Retirement = .kept
    }

    /// Whether this was a dry run: nothing was written or removed, and the outcomes say what
    /// would be.
    public let dryRun: Bool
    /// The items found, in the order of their keys.
    public internal(set) var items: [Item] = []
    /// Whether nothing was written or removed because of conflicts (policy `.stop`).
    public internal(set) var changedNothing = false

    /// The items not adopted because of a conflict.
    public var conflicts: [Item] { items.filter { if case .conflict = $0.outcome { true } else { false } } }

    public var description: String {
        func count(_ test: (Item) -> Bool) -> Int { items.filter(test).count }
        let adopted = count { $0.outcome == .adopted }
        let already = count { $0.outcome == .alreadyAdopted }
        let asking = count { $0.outcome == .needsConfirmation }
        let deleted = count { $0.retirement == .deleted }
        let changed = count { $0.retirement == .changedSinceAdopted }
        let gone = count { $0.retirement == .alreadyGone }
        return "\(dryRun ? "would adopt" : "adopted") \(adopted), already adopted \(already), conflicts \(conflicts.count), "
            + "asking their user \(asking); items deleted \(deleted), changed since adopted \(changed)"
            + (gone > 0 ? ", already gone \(gone)" : "")
            + (changedNothing ? "; nothing changed because of the conflicts" : "")
    }
}
