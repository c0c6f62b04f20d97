import SecureDictionary

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The Secret Service's part of ``DictionaryCopies``: the copies in every collection of the
/// provider that owns the bus name now.
struct KeyringCopies {
    var copies: [DictionaryCopies.Copy] = []
    var collections: [DictionaryCopies.Collection] = []
    var providerName: String?
    var problem: SecureDictionaryError?

    static func find(applicationID: String, dictionaryName: String?, unlock: Bool, timeout: Duration) -> KeyringCopies {
        var result = KeyringCopies()
        do throws(SecureDictionaryError) {
            // Only a provider that runs is asked: opening the service would start an
            // activatable one, a change this search does not make.
            guard try SessionBusName.presence(of: SessionBusName.secretService, until: Deadline(after: timeout)) == .owned
            else {
                throw .serviceUnavailable(reason: "no provider owns \(SessionBusName.secretService) now")
            }
            let survey = try SecretServiceStore().survey(
                applicationID: applicationID, dictionaryName: dictionaryName, unlock: unlock, timeout: timeout)
            result.providerName = survey.providerName
            for collection in survey.collections {
                result.collections.append(
                    DictionaryCopies.Collection(
                        path: collection.path, label: collection.label, aliases: collection.aliases,
                        isLocked: collection.isLocked, unreadableItems: collection.unreadable,
                        unreadableReason: collection.unreadableReason))
                let place = DictionaryCopies.Copy.Place.keyring(
                    provider: survey.providerName, collectionPath: collection.path, label: collection.label,
                    aliases: collection.aliases)
                for copy in collection.copies {
                    result.copies.append(
                        DictionaryCopies.Copy(
                            applicationID: applicationID, dictionaryName: copy.dictionaryName, place: place,
                            modified: copy.modified.map { Date(timeIntervalSince1970: TimeInterval($0)) }, generation: nil,
                            size: copy.size, keyCount: copy.keyCount, problem: copy.problem))
                }
            }
        } catch {
            result.problem = error
        }
        return result
    }
}
