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

extension SecureDictionaryError {
    /// The library's error for a codec error (same reasons: never input bytes).
    init(_ error: BinaryPropertyListError) {
        switch error {
        case .corrupt(let reason): self = .corrupt(reason: reason)
        case .unsupportedVersion(let version): self = .unsupportedFormatVersion(version)
        case .tooLarge(let size, let limit): self = .tooLarge(size: size, limit: limit)
        case .invalidValue(let reason): self = .invalidValue(reason: reason)
        }
    }
}
