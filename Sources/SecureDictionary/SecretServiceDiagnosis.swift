/// What the Secret Service behind a collection alias is and how it answers: the facts
/// `secure-dict doctor` reports. Package-internal: the tool's, not an API promise.
package struct SecretServiceDiagnosis: Sendable, Equatable {
    /// The providers SecureDictionary tells apart (and adapts to): "gnome-keyring",
    /// "KWallet" or "KeePassXC"; `nil` for any other.
    package var providerName: String?
    /// The process that owns `org.freedesktop.secrets`, when the bus tells.
    package var providerPID: Int?
    /// The encrypted transport session's algorithm, e.g. `dh-ietf1024-sha256-aes128-cbc-pkcs7`.
    package var sessionAlgorithm: String
    /// The collection behind the alias; `nil` when the provider has none under it.
    package var collection: Collection?

    package struct Collection: Sendable, Equatable {
        package var path: String
        package var label: String
        package var isLocked: Bool
    }
}
