/// A Secret Service collection, named by alias.
///
/// ```swift
/// let options = SecureDictionary.Options(collection: .session)   // forgotten at logout
/// ```
public struct KeyringCollection: Sendable, Hashable, CustomStringConvertible {
    /// The alias, e.g. `default` or `session`.
    public let alias: String

    /// The collection known to the Secret Service by `alias` (``default`` and ``session``
    /// are the common ones; KWallet and KeePassXC offer `default` only).
    ///
    /// ```swift
    /// let work = KeyringCollection(alias: "work")   // a collection made in Seahorse
    /// ```
    public init(alias: String) { self.alias = alias }

    /// The user's default collection (gnome-keyring: "login"), kept on disk.
    public static let `default` = KeyringCollection(alias: "default")
    /// gnome-keyring's in-memory collection, gone when the daemon stops; handy in tests.
    public static let session = KeyringCollection(alias: "session")

    /// The alias.
    public var description: String { alias }
}
