// The provider's dialogs, shown only where the caller opted in (`Options.unlock`
// `.prompt(timeout:)`), each on a client of its own (``LibSecretClient/forDialogs()``).

extension LibSecretClient {
    /// Shows the provider's unlock dialog for the collection behind `alias`, when it is
    /// locked, and waits for the user up to `timeout` (then dismissed where ``ProviderTraits/dismissesPrompts``).
    ///
    /// - Throws: ``SecureDictionaryError/unlockDismissed`` when the user cancelled,
    ///   ``SecureDictionaryError/locked`` when nobody answered in time.
    func unlockInteractively(_ alias: KeyringCollection, timeout: Duration) throws(SecureDictionaryError) {
        try unlockInteractively(timeout: timeout) { call throws(SecureDictionaryError) in
            try SecretServiceCalls.collectionPath(call, alias)
        }
    }

    /// The same for the collection at `collectionPath` (one without an alias).
    func unlockInteractively(collectionPath: String, timeout: Duration) throws(SecureDictionaryError) {
        try unlockInteractively(timeout: timeout) { _ in collectionPath }
    }

    private func unlockInteractively(
        timeout: Duration, collection: @escaping @Sendable (Call) throws(SecureDictionaryError) -> String
    ) throws(SecureDictionaryError) {
        let deadline = Deadline(after: timeout)
        do {
            try perform(timeout: timeout) { call throws(SecureDictionaryError) in
                let collection = try collection(call)
                guard try SecretServiceCalls.isLocked(call, collection: collection) else { return }
                let provider = call.connection.provider(call.cancellable)
                // Without its dialog's process the provider reports a dismissal at once: `locked`.
                if let prompter = provider.unlockDialogBusName,
                    try SessionBusName.presence(of: prompter, until: deadline) == .absent
                {
                    ErrorContext.recordUnlockDialogUnavailable()
                    throw .locked
                }
                let unlocked = try SecretServiceCalls.confirming(call, dismissing: provider.dismissesPrompts) {
                    () throws(SecureDictionaryError) -> Int in try SecretServiceCalls.unlock(call, paths: [collection])
                }
                if unlocked == 0 { throw .unlockDismissed }
            }
        } catch .confirmationDenied {
            throw .unlockDismissed  // the prompt completed as dismissed: the user said no
        } catch .confirmationRequired {
            throw .locked  // nobody answered in time
        }
    }

    /// Shows the provider's access dialog for the items of `item`'s application this process
    /// may not read yet (``ProviderTraits/lockedItemsMeanConfirmation``) and waits for the user
    /// up to `timeout`: one `Service.Unlock` of those items, which KeePassXC lists in one dialog
    /// and whose answer it remembers for this bus connection, so a process is asked once per KeePassXC run.
    ///
    /// - Throws: ``SecureDictionaryError/confirmationDenied`` when the user did not allow
    ///   `item`, ``SecureDictionaryError/confirmationRequired`` when nobody answered in time
    ///   (the dialog is dismissed where ``ProviderTraits/dismissesPrompts``).
    func confirmAccessInteractively(to item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        try perform(timeout: timeout) { call throws(SecureDictionaryError) in
            let collection = try SecretServiceCalls.collectionPath(call, item.collection)
            let provider = call.connection.provider(call.cancellable)
            guard provider.lockedItemsMeanConfirmation else { return }
            let application = ["xdg:schema": KeyringItem.schemaName, "application": item.applicationID]
            let unconfirmed = try SecretServiceCalls.search(call, attributes: application, in: collection).locked
            guard !unconfirmed.isEmpty else { return }  // allowed meanwhile
            do throws(SecureDictionaryError) {
                _ = try SecretServiceCalls.confirming(call, dismissing: provider.dismissesPrompts) {
                    () throws(SecureDictionaryError) -> Int in try SecretServiceCalls.unlock(call, paths: unconfirmed)
                }
            } catch .confirmationDenied {
                // KeePassXC says "dismissed" when any item listed was not allowed: `item` counts.
                if try !SecretServiceCalls.search(call, attributes: item.attributes, in: collection).locked.isEmpty {
                    throw .confirmationDenied
                }
            }
        }
    }
}
