/// Limits applied to every binary property list decode and encode.
///
/// ```swift
/// let limits = PropertyListLimits(maximumSize: 64 * 1024)
/// let entries = try BinaryPropertyList.decode(blob, limits: limits)
/// ```
///
/// The size limit is checked before a stored blob is parsed at all, and after an encode
/// (the blob is never written when it is too large). The depth limit bounds how deeply
/// containers may nest: the root dictionary is depth 1, a container inside it depth 2, and so
/// on. Both the reader and the writer recurse once per nesting level, so keep `maximumDepth`
/// modest (the default, 64, is far beyond what a settings dictionary needs).
struct PropertyListLimits: Sendable, Equatable {
    /// The largest accepted blob, in bytes.
    var maximumSize: Int
    /// The deepest accepted container nesting; the root dictionary is depth 1.
    var maximumDepth: Int = 64

    /// 4 MiB and a depth of 64.
    static let `default` = PropertyListLimits(maximumSize: 4 * 1024 * 1024)
}
