// Every collection and every copy of an application's dictionaries in them, for
// `SecretServiceStore.survey` (doctor --find).

extension LibSecretClient {
    func survey(applicationID: String, dictionaryName: String?, timeout: Duration) throws(SecureDictionaryError)
        -> KeyringSurvey
    {
        try perform(timeout: timeout, explainsSandbox: false) { call throws(SecureDictionaryError) in
            let provider = call.connection.provider(call.cancellable)
            var aliases: [String: [String]] = [:]
            for alias in ["default", "session", "login"] {  // what a collection may be known by
                do throws(SecureDictionaryError) {
                    let path = try SecretServiceCalls.collectionPath(call, KeyringCollection(alias: alias))
                    aliases[path, default: []].append(alias)
                } catch .noSuchCollection {}
            }
            var attributes = ["xdg:schema": KeyringItem.schemaName, "application": applicationID]
            attributes["dictionary"] = dictionaryName
            var collections: [KeyringSurvey.Collection] = []
            for path in try SecretServiceCalls.collections(call) {
                var collection = KeyringSurvey.Collection(
                    path: path, label: (try? SecretServiceCalls.label(call, collection: path)) ?? "",
                    aliases: aliases[path] ?? [], isLocked: try SecretServiceCalls.isLocked(call, collection: path), copies: [],
                    unreadable: 0)
                let found = try SecretServiceCalls.search(call, attributes: attributes, in: path)
                if !found.locked.isEmpty {
                    collection.unreadable = found.locked.count
                    // Locked items of an unlocked collection: the provider asks its user first.
                    collection.unreadableReason =
                        !collection.isLocked && provider.lockedItemsMeanConfirmation ? .confirmationRequired : .locked
                }
                for item in found.unlocked {
                    if let copy = try Self.surveyedCopy(call, path: item, in: path) { collection.copies.append(copy) }
                }
                collection.copies.sort { $0.dictionaryName < $1.dictionaryName }
                collections.append(collection)
            }
            return KeyringSurvey(providerName: provider.name, collections: collections)
        }
    }

    /// The copy at `path`, its keys counted in place; `nil` for an item whose attributes do not
    /// follow the contract.
    private static func surveyedCopy(_ call: Call, path: String, in collection: String) throws(SecureDictionaryError)
        -> KeyringSurvey.Copy?
    {
        let stored = try SecretServiceCalls.attributes(call, path: path)
        guard let listing = KeyringItemListing(attributes: stored, collection: .default, isLocked: false) else { return nil }
        var copy = KeyringSurvey.Copy(
            itemPath: path, dictionaryName: listing.item.dictionaryName,
            modified: try? SecretServiceCalls.modified(call, path: path))
        do throws(SecureDictionaryError) {
            // A view of libsecret's own locked memory, released when this scope ends.
            let secret = try SecretServiceCalls.secret(call, path: path, collection: collection)
            copy.size = secret.count
            copy.keyCount = try PropertyListBlob.entryCount(of: secret)
        } catch .connectionLost {
            throw .connectionLost
        } catch {
            copy.problem = error
        }
        return copy
    }
}
