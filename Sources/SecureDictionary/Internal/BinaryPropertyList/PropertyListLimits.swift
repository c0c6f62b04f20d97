/// Limits applied to every binary property list decode and encode.
///
/// The size is checked before a stored blob is parsed and after an encode (a blob too large is
/// never written). The reader and writer recurse once per nesting level: 64 is far beyond
/// what settings need.
struct PropertyListLimits: Sendable, Equatable {
    /// The largest accepted blob, in bytes.
    var maximumSize: Int
    /// The deepest accepted container nesting; the root dictionary is depth 1.
    var maximumDepth: Int = 64

    static let `default` = PropertyListLimits(maximumSize: 4 * 1024 * 1024)
}
