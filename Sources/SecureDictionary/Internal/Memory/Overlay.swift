/// The caller's changes to a dictionary, apart from the stored generation they apply to: key
/// → new value or removal, and whether the stored entries are dropped first (what `update { }`
/// collects in ``SecureDictionary/Entries``; ``Generation/writing(_:onto:limits:logger:)`` writes them).
///
/// The values are the caller's own; the stored entries stay in the generation's region.
struct Overlay: Sendable {
    /// A key compared by its Unicode scalars, as stored keys are (``StoredString``).
    struct Key: Hashable, Sendable {
        let text: String

        static func == (left: Key, right: Key) -> Bool { left.text.utf8.elementsEqual(right.text.utf8) }

        func hash(into hasher: inout Hasher) { StoredString.hash(text, into: &hasher) }
    }

    /// One change: a new value, or the key's removal.
    enum Edit: Sendable {
        case value(PropertyListValue)
        case removed

        var value: PropertyListValue? {
            if case .value(let value) = self { return value }
            return nil
        }
    }

    /// Whether the stored entries are dropped before the changes apply (`removeAll()`).
    var dropsStored = false
    var edits: Edits = [:]
    typealias Edits = [Key: Edit]

    /// Sets `key` to `value`; `nil` removes it.
    mutating func set(_ key: String, to value: PropertyListValue?) {
        edits[Key(text: key)] = value.map(Edit.value) ?? .removed
    }

    func edit(of key: String) -> Edit? { edits[Key(text: key)] }

    /// Drops every stored entry and every change so far.
    mutating func removeAll() {
        dropsStored = true
        edits.removeAll()
    }
}
