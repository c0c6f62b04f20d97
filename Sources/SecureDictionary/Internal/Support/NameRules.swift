/// The rules for dictionary names, application IDs and collection aliases, checked before
/// any D-Bus call.
enum NameRules {
    /// Longest accepted name, in UTF-8 bytes.
    static let maximumLength = 255

    /// - Throws: ``SecureDictionaryError/invalidName(reason:)`` when `name` is empty, longer
    ///   than ``maximumLength`` UTF-8 bytes, or holds a control character (C0, DEL, C1).
    static func validate(_ name: String, what: String) throws(SecureDictionaryError) {
        if name.isEmpty {
            throw .invalidName(reason: "the \(what) is empty")
        }
        if name.utf8.count > maximumLength {
            throw .invalidName(reason: "the \(what) is longer than \(maximumLength) bytes")
        }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw .invalidName(reason: "the \(what) contains a control character")
        }
    }
}
