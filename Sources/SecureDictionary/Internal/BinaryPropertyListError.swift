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

/// Why a binary property list could not be decoded or encoded.
///
/// Reasons are fixed texts written here: they never contain bytes, keys or values taken
/// from the input, which may be secret (or hostile). ``unsupportedVersion(_:)`` holds the two
/// version characters only, reduced to printable ASCII.
enum BinaryPropertyListError: Error, Equatable, Sendable {
    /// The bytes are not a binary property list this reader accepts.
    case corrupt(reason: String)
    /// The bytes start with `bplist` but carry a version other than `00` (e.g. `"15"`).
    case unsupportedVersion(String)
    /// The blob (stored, or about to be stored) is larger than the limit.
    case tooLarge(size: Int, limit: Int)
    /// A value cannot be encoded, e.g. because it nests deeper than the limit.
    case invalidValue(reason: String)
}

extension BinaryPropertyListError: CustomStringConvertible {
    var description: String {
        switch self {
        case .corrupt(let reason):
            "corrupt binary property list: \(reason)"
        case .unsupportedVersion(let version):
            "unsupported binary property list version \"\(version)\""
        case .tooLarge(let size, let limit):
            "property list too large: \(size) bytes, limit \(limit)"
        case .invalidValue(let reason):
            "value cannot be stored as a property list: \(reason)"
        }
    }
}
