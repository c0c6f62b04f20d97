// Items outside the dictionary contract, for adoption and its way back (ForeignItemStore).

extension LibSecretClient {
    func foreignItems(matching attributes: [String: String], in alias: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [ForeignItem]
    {
        try perform(timeout: timeout) { call throws(SecureDictionaryError) in
            let collection = try SecretServiceCalls.collectionPath(call, alias)
            return try Self.unlockingWithoutPrompt(call, collection) { () throws(SecureDictionaryError) in
                let found = try SecretServiceCalls.search(call, attributes: attributes, in: collection)
                let needsConfirmation = try found.locked.isEmpty ? false : Self.lockedItemsMeanConfirmation(call, collection)
                if !found.locked.isEmpty, !needsConfirmation { throw .locked }
                if found.unlocked.isEmpty, found.locked.isEmpty, try SecretServiceCalls.isLocked(call, collection: collection) {
                    throw .locked
                }
                var items: [ForeignItem] = []
                for (paths, asking) in [(found.unlocked, false), (found.locked, needsConfirmation)] {
                    for path in paths {
                        let stored = (try? SecretServiceCalls.attributes(call, path: path)) ?? [:]
                        items.append(
                            ForeignItem(path: path, attributes: stored, collection: collection, needsConfirmation: asking))
                    }
                }
                return items.sorted { $0.path < $1.path }
            }
        }
    }

    func foreignSecret(of item: ForeignItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes {
        try perform(timeout: timeout) { call throws(SecureDictionaryError) in
            try SecretServiceCalls.secret(call, path: item.path, collection: item.collection)
        }
    }

    func deleteForeign(_ item: ForeignItem, timeout: Duration) throws(SecureDictionaryError) {
        try perform(timeout: timeout, writes: true) { call throws(SecureDictionaryError) in
            try SecretServiceCalls.deleteItem(call, path: item.path)
        }
    }

    func createForeign(
        attributes: [String: String], label: String, secret: SecretBytes, contentType: String,
        in alias: KeyringCollection, timeout: Duration
    ) throws(SecureDictionaryError) -> ForeignItem {
        try perform(timeout: timeout, writes: true) { call throws(SecureDictionaryError) in
            let collection = try SecretServiceCalls.collectionPath(call, alias)
            let path = try Self.unlockingWithoutPrompt(call, collection) { () throws(SecureDictionaryError) in
                try SecretServiceCalls.createItem(
                    call, secret, label: label, attributes: attributes, contentType: contentType, in: collection)
            }
            return ForeignItem(path: path, attributes: attributes, collection: collection)
        }
    }
}
