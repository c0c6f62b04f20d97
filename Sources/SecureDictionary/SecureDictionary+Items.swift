extension SecureDictionary {
    /// Removes this dictionary's item from the keyring, at sign-out or account removal for
    /// instance; returns whether there was one. The dictionary stays usable, loaded and empty:
    /// a later write creates the item again.
    ///
    /// ```swift
    /// try session.delete()
    /// ```
    ///
    /// - Throws: ``SecureDictionaryError/locked``, ``SecureDictionaryError/timedOut``…
    @discardableResult
    public func delete() throws(SecureDictionaryError) -> Bool {
        try state.deleteItem(options.context)
    }

    /// Removes a dictionary's item from the keyring without opening it; returns whether there
    /// was one.
    ///
    /// ```swift
    /// let removed = try SecureDictionary.delete(name: "auth", applicationID: "com.example.app")
    /// ```
    ///
    /// This is also the explicit way to discard an item that cannot be decoded
    /// (``SecureDictionaryError/corrupt(reason:)``): nothing else ever writes over one. The
    /// application ID has no default here, and the result must be used, so that a sign-out
    /// cannot silently delete nothing because it named another application.
    ///
    /// - Throws: ``SecureDictionaryError/locked``, ``SecureDictionaryError/timedOut``…
    public static func delete(
        name: String?,
        applicationID: String,
        options: Options = Options()
    ) throws(SecureDictionaryError) -> Bool {
        let item = try KeyringItem(dictionaryName: name, applicationID: applicationID, collection: options.collection)
        return try ItemRegistry.state(for: item, store: options.store, logger: options.logger).deleteItem(options.context)
    }

    /// The names of `applicationID`'s dictionaries in the collection; `""` is the default one.
    ///
    /// ```swift
    /// let names = try SecureDictionary.names(applicationID: "com.example.app")   // ["", "tokens"]
    /// ```
    ///
    /// - Throws: ``SecureDictionaryError/locked`` when the collection is locked and nothing
    ///   can be listed, ``SecureDictionaryError/timedOut``…
    public static func names(
        applicationID: String = SecureDictionary.defaultApplicationID,
        options: Options = Options()
    ) throws(SecureDictionaryError) -> [String] {
        try items(applicationID: applicationID, options: options).map(\.item.dictionaryName)
    }

    /// Every SecureDictionary item in the collection, of one application or (`nil`) of all,
    /// with whether each is locked. Reads attributes only, never secrets.
    ///
    /// ```swift
    /// for listing in try SecureDictionary.items() {
    ///     print(listing.item.name, listing.isLocked ? "locked" : "")
    /// }
    /// ```
    ///
    /// - Throws: as ``names(applicationID:options:)``.
    public static func items(applicationID: String? = nil, options: Options = Options())
        throws(SecureDictionaryError) -> [KeyringItemListing]
    {
        if let applicationID { try NameRules.validate(applicationID, what: "application ID") }
        return try options.store.listItems(
            applicationID: applicationID, collection: options.collection, timeout: options.timeout)
    }
}
