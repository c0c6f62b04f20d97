/// A change of one key, described so that a write can splice it into the stored blob rather
/// than encode the whole dictionary again.
///
/// ```swift
/// let edit = KeyEdit(key: "theme", value: .string("dark"))  // `value: nil` removes the key
/// let blob = try edit.splice(stored, limits: .default)         // nil: encode in full instead
/// ```
///
/// Optimization: before every write the library reads the stored blob anyway (to see whether
/// anyone else wrote), so a one-key change costs a splice of that blob, a few bulk copies,
/// where a full encode walks, sorts and writes every entry. Gain: the 10,000-entry mutation
/// row (`mutation-10000`) went from 1.22–1.29× to 1.14–1.18× raw libsecret when it came
/// (Benchmarks/README.md). Safe: the splice gives exactly the bytes the full encode would
/// (``BinaryPropertyListSplice``; `BinaryPropertyListSpliceTests` compares them, and debug
/// builds assert it after every one-key write, so debug-build timings mean nothing). When the
/// stored blob is not in the layout it supports (a blob another program wrote, a key that is
/// not ASCII, a new value that is a container with elements), the full encode runs instead.
/// The write path never depends on which blobs the splice accepts: the stored blob was
/// decoded by the check before anything is spliced.
struct KeyEdit: Sendable {
    let key: String
    /// The new value, or `nil` to remove the key.
    let value: PropertyListValue?

    /// `stored` with this edit spliced in, or `nil` when the splice does not apply.
    ///
    /// - Throws: what ``BinaryPropertyList/encode(_:limits:)`` would throw for the result
    ///   (``SecureDictionaryError/tooLarge(size:limit:)``…).
    func splice(_ stored: StoredBlob, limits: PropertyListLimits) throws(SecureDictionaryError) -> [UInt8]? {
        do throws(BinaryPropertyListError) {
            return try BinaryPropertyListSplice.blob(editing: stored.bytes, key: key, value: value, limits: limits)
        } catch {
            throw SecureDictionaryError(error)
        }
    }

    /// For debug builds' `assert` after every one-key write (``ItemState``): whether `spliced`
    /// is byte for byte the full encode of `entries`.
    static func matchesFullEncode(
        _ spliced: [UInt8], _ entries: [String: PropertyListValue], _ limits: PropertyListLimits
    ) -> Bool {
        guard var full = try? BinaryPropertyList.encode(entries, limits: limits) else { return false }
        defer { Wipe.bytes(&full) }
        return full == spliced
    }
}

/// The stored blob a write's check read, kept for ``KeyEdit`` and wiped when the last
/// reference goes.
final class StoredBlob {
    private(set) var bytes: [UInt8]

    /// Takes `bytes` over, leaving the caller's array empty, so this holds the only reference.
    init(taking bytes: inout [UInt8]) {
        self.bytes = []
        swap(&self.bytes, &bytes)
    }

    deinit { Wipe.bytes(&bytes) }
}
