import FoundationEssentials
import Glibc
import SecureDictionary

/// The steps of ``SecureDictionary/adopt(_:into:applicationID:options:conflicts:retire:dryRun:)``,
/// in the order they run. Each step leaves every secret findable: in its item, in the
/// dictionary, or in both.
enum Adoption {
    /// One item read, with what the dictionary gets from it.
    struct Found {
        let item: ForeignItem
        let key: String?
        /// The secret as stored.
        let secret: SecretBytes
        /// The entry's value (`nil` when the secret cannot be decoded as its library wrote it).
        let value: PropertyListValue?
        /// Its row in the report.
        var row = 0
        /// Whether the dictionary holds its value once written (adopted or already there).
        var held = false
    }

    /// Reads every item that `items` names, and records those that cannot be read.
    static func read(
        _ items: ForeignItems, from store: any ForeignItemStore, timeout: Duration, into report: inout AdoptionReport
    ) throws(SecureDictionaryError) -> [Found] {
        var found: [Found] = []
        for item in try store.foreignItems(matching: items.attributes, in: items.collection, timeout: timeout)
        where item.attributes["xdg:schema"] != KeyringItem.schemaName {  // never a dictionary's own item
            let key = item.attributes[items.keyAttribute].flatMap { $0.isEmpty ? nil : $0 }
            let secret: SecretBytes
            do throws(SecureDictionaryError) {
                guard !item.needsConfirmation else { throw .confirmationRequired }
                secret = try store.foreignSecret(of: item, timeout: timeout)
            } catch .confirmationRequired {
                report.items.append(.init(key: key, outcome: .needsConfirmation))
                continue
            } catch {
                // Removed since the search (by another adoption that retired it, or by its
                // library): nothing of it to adopt here.
                if try isGone(item, items, from: store, timeout: timeout) { continue }
                throw error
            }
            // A string when its bytes are UTF-8, else data (QtKeychain's base64 text, decoded,
            // when its `type` says so).
            let value: PropertyListValue? = secret.withUnsafeBytes { bytes in
                if items.encoding == .qtKeychain, item.attributes["type"] == "base64" {
                    return Data(base64Encoded: Data(bytes)).map { .data($0) }
                }
                if let text = String(validating: bytes, as: UTF8.self) { return .string(text) }
                return .data(Data(bytes))
            }
            found.append(Found(item: item, key: key, secret: secret, value: value))
        }
        return found.sorted { ($0.key ?? "", $0.item.path) < ($1.key ?? "", $1.item.path) }
    }

    /// Whether `item` is no longer in the keyring. A removed item's secret does not fail
    /// clearly (gnome-keyring sends none and no error, which reads as a failed session), so
    /// a failed call on an item is checked against a new search.
    static func isGone(_ item: ForeignItem, _ items: ForeignItems, from store: any ForeignItemStore, timeout: Duration)
        throws(SecureDictionaryError) -> Bool
    {
        try !store.foreignItems(matching: items.attributes, in: items.collection, timeout: timeout).contains {
            $0.path == item.path
        }
    }

    /// Decides, against the dictionary's entries, what becomes of each item, and records it.
    static func plan(
        _ found: inout [Found], against entries: SecureDictionary.Entries, policy: SecureDictionary.AdoptionConflictPolicy,
        into report: inout AdoptionReport
    ) {
        let byKey = Dictionary(grouping: found.indices.filter { found[$0].key != nil }) { found[$0].key! }
        for index in found.indices {
            found[index].row = report.items.count
            let outcome = decide(found[index], siblings: byKey[found[index].key ?? ""] ?? [], found, entries, policy)
            report.items.append(.init(key: found[index].key, outcome: outcome))
            found[index].held = outcome == .adopted || outcome == .alreadyAdopted
        }
    }

    /// Two keys that are one text in two Unicode forms (NFC "é" and NFD "e" + U+0301) are
    /// equal Swift strings, so a dictionary holds one of them only: such items are conflicts,
    /// never merged into one entry that `exportItems` would give back as one item.
    private static func decide(
        _ one: Found, siblings: [Int], _ found: [Found], _ entries: SecureDictionary.Entries,
        _ policy: SecureDictionary.AdoptionConflictPolicy
    ) -> AdoptionReport.Outcome {
        guard let key = one.key else { return .conflict(reason: "the item has no key attribute, or an empty one") }
        guard let value = one.value else { return .conflict(reason: "its secret is not in the form its library writes") }
        if siblings.contains(where: { found[$0].key.map { !sameSpelling($0, key) } ?? false }) {
            return .conflict(reason: "another item's key is this text in another Unicode form (NFC, NFD): rename one")
        }
        let values = siblings.compactMap { found[$0].value }
        guard values.count == siblings.count, values.allSatisfy({ $0.isStoredIdentically(to: value) }) else {
            return .conflict(reason: "several items have this key, with different values")
        }
        // Compared in place: no copy of the dictionary's value is made. Keys match by their
        // Unicode scalars, so the same text in another Unicode form is looked for among the
        // keys (only a key with a non-ASCII scalar has another form).
        if entries.holds(key, identicalTo: nil) {
            let otherForm =
                !key.unicodeScalars.allSatisfy(\.isASCII)
                && entries.keys.contains { $0 == key && !sameSpelling($0, key) }
            return otherForm ? .conflict(reason: "the dictionary holds this key in another Unicode form (NFC, NFD)") : .adopted
        }
        if entries.holds(key, identicalTo: value) { return .alreadyAdopted }
        switch policy {
        case .takeItem: return .adopted
        case .stop, .keepDictionary: return .conflict(reason: "the dictionary holds another value under this key")
        }
    }

    /// Whether two keys are spelled with the same Unicode scalars (`==` also holds for two
    /// canonically equivalent spellings).
    private static func sameSpelling(_ a: String, _ b: String) -> Bool { a.unicodeScalars.elementsEqual(b.unicodeScalars) }

    /// Thrown inside the dictionary's update to write nothing.
    struct Stop: Error {}

    /// Writes the planned entries in one update, planning against what is stored at that
    /// moment (another writer may have changed it since the dry look); with conflicts and
    /// ``SecureDictionary/AdoptionConflictPolicy/stop``, writes nothing.
    static func write(
        _ found: inout [Found], into dictionary: SecureDictionary, policy: SecureDictionary.AdoptionConflictPolicy,
        report: inout AdoptionReport
    ) throws(SecureDictionaryError) -> Bool {
        let rows = report.items.count
        do {
            try dictionary.update { entries in
                report.items.removeSubrange(rows...)
                plan(&found, against: entries, policy: policy, into: &report)
                if policy == .stop && !report.conflicts.isEmpty { throw Stop() }
                for one in found where report.items[one.row].outcome == .adopted { entries[one.key!] = one.value }
            }
            return true
        } catch let error as SecureDictionaryError {
            throw error
        } catch {
            return false  // Stop, the only other error thrown
        }
    }

    /// Reads the dictionary back from the keyring: every entry it must hold, as adopted.
    static func verify(_ found: [Found], in dictionary: SecureDictionary) throws(SecureDictionaryError) {
        let stored = try dictionary.reloadedEntries()
        for one in found where one.held {
            guard let key = one.key, let value = one.value, stored.holds(key, identicalTo: value) else {
                throw .writeNotVerified(restored: false)
            }
        }
    }

    /// Removes, one by one, the items whose values the dictionary holds, each only while it
    /// still holds the secret adopted, then checks that they are gone.
    static func retire(
        _ found: [Found], from store: any ForeignItemStore, items: ForeignItems, timeout: Duration,
        report: inout AdoptionReport
    ) throws(SecureDictionaryError) {
        var deleted: Set<String> = []
        for (number, one) in found.filter(\.held).enumerated() {
            do {
                guard try store.foreignSecret(of: one.item, timeout: timeout).holdsSameBytes(as: one.secret) else {
                    report.items[one.row].retirement = .changedSinceAdopted
                    continue
                }
                try store.deleteForeign(one.item, timeout: timeout)
            } catch {
                // Another run of this adoption retired it first: its value is in the dictionary.
                guard try isGone(one.item, items, from: store, timeout: timeout) else { throw error }
                report.items[one.row].retirement = .alreadyGone
                continue
            }
            deleted.insert(one.item.path)
            report.items[one.row].retirement = .deleted
            step("retired \(number + 1)")
        }
        let left = try store.foreignItems(matching: items.attributes, in: items.collection, timeout: timeout)
        if left.contains(where: { deleted.contains($0.path) }) {
            throw .keyring(domain: "SecureDictionary", code: 0, message: "an item adopted and deleted is still in the keyring")
        }
    }

    /// A named point between two steps. Test builds stop the process there when
    /// `SD_TEST_ADOPTION_KILL_AT` names it, as a `kill -9` would.
    static func step(_ name: String) {
        #if ENABLE_TESTING_HOOKS
            if ProcessInfo.processInfo.environment["SD_TEST_ADOPTION_KILL_AT"] == name { raise(SIGKILL) }
        #endif
    }
}
