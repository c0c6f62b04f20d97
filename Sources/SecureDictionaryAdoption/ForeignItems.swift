import FoundationEssentials
public import SecureDictionary

/// Secrets that another library or tool keeps as one keyring item per key, and how each
/// becomes an entry of a dictionary: the items whose attributes include ``attributes``, each
/// under the key its ``keyAttribute`` names.
///
/// ```swift
/// // What python's `keyring.set_password("my-app", user, token)` stored, one item per user:
/// let report = try SecureDictionary.adopt(.pythonKeyring(service: "my-app"), into: "tokens")
/// ```
///
/// Each ready-made rule names the library and version whose items it was tested against.
public struct ForeignItems: Sendable, CustomStringConvertible {
    /// Attributes every item has (exact values). Attributes are not secret: any process of
    /// the user can list them.
    public var attributes: [String: String]
    /// The attribute whose value is the item's key in the dictionary (`username`, `account`…).
    public var keyAttribute: String
    /// The collection the items are in (default: the `default` alias).
    public var collection: KeyringCollection
    /// How the library encoded its secrets.
    public var encoding: Encoding
    /// The label of an item written back for `key` (``SecureDictionary/SecureDictionary/exportItems(_:from:applicationID:options:)``).
    public var label: @Sendable (_ key: String) -> String

    /// How a library stored its secret bytes.
    public enum Encoding: Sendable, Equatable {
        /// As they are: an entry is a string when the bytes are UTF-8, else data; written back
        /// as `text/plain` or `application/octet-stream`.
        case bytes
        /// QtKeychain's: text with the attribute `type` = `plaintext`, or binary data as
        /// base64 text with `type` = `base64`.
        case qtKeychain
    }

    /// Items with `attributes`, each under the key its `keyAttribute` names.
    public init(
        attributes: [String: String], keyAttribute: String, collection: KeyringCollection = .default,
        encoding: Encoding = .bytes, label: @escaping @Sendable (_ key: String) -> String = { $0 }
    ) {
        self.attributes = attributes
        self.keyAttribute = keyAttribute
        self.collection = collection
        self.encoding = encoding
        self.label = label
    }

    /// python `keyring`'s Secret Service backend (`keyring.set_password(service, username, …)`):
    /// attributes `service`, `username` and `application` = `Python keyring library`. Tested
    /// with keyring 23.9.3 and secretstorage 3.3.3 (Debian 12).
    public static func pythonKeyring(service: String) -> ForeignItems {
        ForeignItems(
            attributes: ["service": service, "application": "Python keyring library"], keyAttribute: "username",
            label: { "Password for '\($0)' on '\(service)'" })
    }

    /// keytar (and Electron apps that use it, `setPassword(service, account, …)`): attributes
    /// `service` and `account`, schema `org.freedesktop.Secret.Generic`, label
    /// `service/account`. Attributes as keytar's `keytar_linux.cc` writes them (not packaged
    /// here: its items are made with `secret-tool` in the tests).
    public static func keytar(service: String) -> ForeignItems {
        ForeignItems(
            attributes: ["service": service, "xdg:schema": "org.freedesktop.Secret.Generic"], keyAttribute: "account",
            label: { "\(service)/\($0)" })
    }

    /// go-keyring (zalando, `keyring.Set(service, user, …)`): attributes `service` and
    /// `username`, in the `login` collection. Attributes as go-keyring's
    /// `keyring_unix.go` writes them (not packaged here: its items are made with `secret-tool`
    /// in the tests).
    public static func goKeyring(service: String) -> ForeignItems {
        ForeignItems(
            attributes: ["service": service], keyAttribute: "username", collection: KeyringCollection(alias: "login"),
            label: { "Password for '\($0)' on '\(service)'" })
    }

    /// QtKeychain's libsecret backend (`QKeychain::WritePasswordJob(service)` with
    /// `setKey(key)`): schema `org.qt.keychain`, attributes `server` = service, `user` = key,
    /// `type` = `plaintext` or `base64` (binary data), label = service. Tested with
    /// libqt5keychain1 0.13.2 (Debian 12).
    public static func qtKeychain(service: String) -> ForeignItems {
        ForeignItems(
            attributes: ["server": service, "xdg:schema": "org.qt.keychain"], keyAttribute: "user", encoding: .qtKeychain,
            label: { _ in service })
    }

    /// The names of attributes and the key attribute: never a value.
    public var description: String {
        "items with \(attributes.keys.sorted().joined(separator: ", ")), keyed by \(keyAttribute), in '\(collection.alias)'"
    }
}
