/// Every copy of an application's dictionaries in every collection of the Secret Service that
/// answers now: what `secure-dict doctor --find` and `DictionaryCopies` report.
/// Package-internal: the tool's and the file stores', not an API promise.
package struct KeyringSurvey: Sendable {
    /// "gnome-keyring", "KWallet" or "KeePassXC"; `nil` for another provider.
    package var providerName: String?
    /// Every collection of the service, in the order the service lists them.
    package var collections: [Collection]

    package struct Collection: Sendable {
        package var path: String
        package var label: String
        /// The aliases among `default`, `session` and `login` that name it.
        package var aliases: [String]
        package var isLocked: Bool
        /// The dictionaries read in it.
        package var copies: [Copy]
        /// Items of the application that could not be read: in a locked collection, or (KeePassXC)
        /// waiting for its user to allow this process. Their names are unknown.
        package var unreadable: Int
        /// Why those cannot be read: ``SecureDictionaryError/locked`` or
        /// ``SecureDictionaryError/confirmationRequired``.
        package var unreadableReason: SecureDictionaryError?
    }

    /// One dictionary's item. Its keys are counted in place and never decoded (no key or
    /// value is kept).
    package struct Copy: Sendable {
        package var itemPath: String
        /// Empty for the default dictionary.
        package var dictionaryName: String
        /// The item's Modified property (D-Bus), seconds since 1970, when the provider tells it.
        package var modified: Int64?
        /// The stored blob's size in bytes, when it was read.
        package var size: Int?
        /// The number of keys, when the blob decodes.
        package var keyCount: Int?
        /// Why its secret could not be read or does not decode.
        package var problem: SecureDictionaryError?
    }
}

extension SecretServiceStore {
    /// Lists every collection and, in each, the items of `applicationID` (only `dictionaryName`'s
    /// when it is given; `""` is the default dictionary), reading each unlocked one's secret to
    /// tell its size and count its keys. Shows no prompt and changes nothing, unless `unlock`:
    /// then each locked collection is unlocked first, with the provider's dialog where one is
    /// needed (waiting up to `timeout` for it). Throws only what opening the service throws: a
    /// collection or an item that cannot be read is reported in the survey.
    package func survey(applicationID: String, dictionaryName: String?, unlock: Bool, timeout: Duration)
        throws(SecureDictionaryError) -> KeyringSurvey
    {
        if unlock {
            let dialogs = LibSecretClient.forDialogs()
            let first = try client.survey(applicationID: applicationID, dictionaryName: dictionaryName, timeout: timeout)
            for collection in first.collections where collection.isLocked {
                try? dialogs.unlockInteractively(collectionPath: collection.path, timeout: timeout)
            }
        }
        return try client.survey(applicationID: applicationID, dictionaryName: dictionaryName, timeout: timeout)
    }
}
