import FoundationEssentials
public import SecureDictionary

extension SecureDictionary {
    /// The way back from ``adopt(_:into:applicationID:options:conflicts:retire:dryRun:)``:
    /// writes each string and data entry of the dictionary `name` as a per-key item of the
    /// library `items` describes, read back before it counts, for a release that must be
    /// able to downgrade. The dictionary is left as it is.
    ///
    /// ```swift
    /// let report = try SecureDictionary.exportItems(.pythonKeyring(service: "my-app"), from: "tokens")
    /// ```
    ///
    /// An item that already holds the entry's value counts as written; one that holds another
    /// value is a conflict and is left alone. Entries of other types (numbers, dates, arrays…)
    /// have no per-key form and are reported as skipped; a key holding a NUL character, which
    /// no item's attribute can hold, is refused.
    ///
    /// - Throws: what reading the dictionary or writing an item throws; `writeNotVerified(restored:)`
    ///   when an item read back differs; ``AdoptionError/storeHoldsNoItems(operation:)``.
    @discardableResult
    public static func exportItems(
        _ items: ForeignItems, from name: String?, applicationID: String = SecureDictionary.defaultApplicationID,
        options: Options = Options()
    ) throws(SecureDictionaryError) -> ItemExportReport {
        guard let store = options.store as? any ForeignItemStore else { throw .storeHoldsNoItems(operation: "exportItems") }
        let dictionary = try SecureDictionary(name: name, applicationID: applicationID, options: options)
        var report = ItemExportReport()
        for (key, value) in dictionary.snapshot.sorted(by: { $0.key < $1.key }) {
            // An attribute is a C string: the key would be cut at its NUL, and the item of
            // another key written.
            guard !key.utf8.contains(0) else {
                report.refused.append(key)
                continue
            }
            guard let (secret, attributes, contentType) = ItemExport.form(of: value, key: key, items) else {
                report.skipped.append(key)
                continue
            }
            let existing = try store.foreignItems(matching: attributes, in: items.collection, timeout: options.timeout)
            if let first = existing.first {
                let stored = try store.foreignSecret(of: first, timeout: options.timeout)
                if existing.count == 1 && stored.holdsSameBytes(as: secret) {
                    report.alreadyThere.append(key)
                } else {
                    report.conflicts.append(key)
                }
                continue
            }
            let created = try store.createForeign(
                attributes: attributes, label: items.label(key), secret: secret, contentType: contentType,
                in: items.collection, timeout: options.timeout)
            let readBack = try store.foreignSecret(of: created, timeout: options.timeout)
            guard readBack.holdsSameBytes(as: secret) else { throw .writeNotVerified(restored: false) }
            report.written.append(key)
        }
        return report
    }
}

/// What ``SecureDictionary/SecureDictionary/exportItems(_:from:applicationID:options:)`` did, by key. Its
/// `description` gives counts only.
public struct ItemExportReport: Sendable, CustomStringConvertible {
    /// Keys written as new items, each read back.
    public internal(set) var written: [String] = []
    /// Keys whose item already held the entry's value.
    public internal(set) var alreadyThere: [String] = []
    /// Keys whose item holds another value (or several items match): left alone.
    public internal(set) var conflicts: [String] = []
    /// Keys whose values have no per-key form (not a string or data).
    public internal(set) var skipped: [String] = []
    /// Keys holding NUL, which no item's attribute (a C string) can hold: nothing was written.
    public internal(set) var refused: [String] = []

    public var description: String {
        "wrote \(written.count), already there \(alreadyThere.count), conflicts \(conflicts.count), skipped \(skipped.count)"
            + (refused.isEmpty ? "" : ", refused \(refused.count) (keys holding NUL, which an item's attribute cannot hold)")
    }
}

enum ItemExport {
    /// The secret, attributes and content type of the item for `key` holding `value`, as the
    /// library of `items` writes them; `nil` for a value with no per-key form.
    static func form(of value: PropertyListValue, key: String, _ items: ForeignItems)
        -> (secret: SecretBytes, attributes: [String: String], contentType: String)?
    {
        var attributes = items.attributes.merging([items.keyAttribute: key]) { _, key in key }
        switch (value, items.encoding) {
        case (.string(let text), .bytes):
            return (SecretBytes(copying: text.utf8), attributes, "text/plain")
        case (.data(let data), .bytes):
            return (SecretBytes(copying: data), attributes, "application/octet-stream")
        case (.string(let text), .qtKeychain):
            attributes["type"] = "plaintext"
            return (SecretBytes(copying: text.utf8), attributes, "text/plain")
        case (.data(let data), .qtKeychain):
            attributes["type"] = "base64"
            return (SecretBytes(copying: data.base64EncodedString().utf8), attributes, "text/plain")
        default:
            return nil
        }
    }
}
