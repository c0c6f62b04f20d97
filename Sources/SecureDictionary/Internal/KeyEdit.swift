/// A change of one key, described so that a write can splice it into the stored blob rather
/// than encode the whole dictionary again.
///
/// ```swift
/// let edit = KeyEdit(key: "theme", value: .string("dark"))  // `value: nil` removes the key
/// let (blob, spliced) = try edit.blob(for: changedEntries, from: stored, limits: .default)
/// ```
///
/// Before every write the library reads the stored blob anyway (to see whether anyone else
/// wrote), so a one-key change costs a splice of that blob, a few bulk copies, where a full
/// encode walks, sorts and writes every entry (1.9 ms at 10,000 entries on the benchmark
/// machine). The splice gives exactly the bytes the full encode would
/// (``BinaryPropertyListSplice``); when the stored blob is not in the layout it supports (a
/// blob another program wrote, a key that is not ASCII, a new value that is a container with
/// elements), the full encode runs instead.
struct KeyEdit: Sendable {
    let key: String
    /// The new value, or `nil` to remove the key.
    let value: PropertyListValue?

    /// The blob of `entries`, which must be `stored`'s entries with this edit applied: spliced
    /// from `stored` when it can be (`spliced` is then `true`), else encoded in full.
    ///
    /// - Throws: what ``BinaryPropertyList/encode(_:limits:)`` throws for `entries`
    ///   (``SecureDictionaryError/tooLarge(size:limit:)``…).
    func blob(
        for entries: [String: PropertyListValue], from stored: StoredBlob?, limits: PropertyListLimits
    ) throws(SecureDictionaryError) -> (blob: [UInt8], spliced: Bool) {
        if let stored, let spliced = try splice(stored, limits: limits) { return (spliced, true) }
        return (try BinaryPropertyList.blob(of: entries, limits: limits), false)
    }

    /// `stored` with this edit spliced in, or `nil` when the splice does not apply. A blob it
    /// splices is one the reader decodes (see ``BinaryPropertyListSplice``).
    ///
    /// - Throws: what ``BinaryPropertyList/encode(_:limits:)`` would throw for the result.
    func splice(_ stored: StoredBlob, limits: PropertyListLimits) throws(SecureDictionaryError) -> [UInt8]? {
        do throws(BinaryPropertyListError) {
            return try BinaryPropertyListSplice.blob(editing: stored.bytes, key: key, value: value, limits: limits)
        } catch {
            throw SecureDictionaryError(error)
        }
    }

    /// For debug builds' `assert` after every write (``ItemState``): whether `spliced` is byte
    /// for byte the full encode of `entries`.
    static func matchesFullEncode(
        _ spliced: [UInt8], _ entries: [String: PropertyListValue], _ limits: PropertyListLimits
    ) -> Bool {
        guard var full = try? BinaryPropertyList.encode(entries, limits: limits) else { return false }
        defer { Wipe.bytes(&full) }
        return full == spliced
    }
}

/// The stored blob a write's check read, kept for ``KeyEdit`` and wiped when the last
/// reference goes (a check's result may be dropped on several paths of the writer lock).
final class StoredBlob {
    private(set) var bytes: [UInt8]

    /// Takes `bytes` over, leaving the caller's array empty, so this holds the only reference.
    init(taking bytes: inout [UInt8]) {
        self.bytes = []
        swap(&self.bytes, &bytes)
    }

    deinit { Wipe.bytes(&bytes) }
}
