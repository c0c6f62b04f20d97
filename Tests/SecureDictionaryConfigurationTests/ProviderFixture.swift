import Foundation
import SecureDictionary
import SecureDictionaryConfiguration

/// A dictionary on its own in-memory store, and a provider over it.
struct ProviderFixture {
    let store = InMemoryKeyringStore()
    let applicationID = "test.configuration.\(UUID().uuidString)"
    let dictionary: SecureDictionary
    var provider: SecureDictionaryProvider { SecureDictionaryProvider(dictionary) }

    init(_ entries: [String: PropertyListValue] = [:]) throws {
        dictionary = try SecureDictionary(name: "config", applicationID: applicationID, options: .init(store: store))
        try dictionary.update { $0.dictionary = entries }
    }

    /// What another process would do: the item in the store replaced by one holding
    /// `entries`, without this process's dictionary hearing of it.
    func writeFromOutside(_ entries: [String: PropertyListValue]) throws {
        let elsewhere = InMemoryKeyringStore()
        let writer = try SecureDictionary(name: "config", applicationID: applicationID, options: .init(store: elsewhere))
        try writer.update { $0.dictionary = entries }
        store.plant(elsewhere.storedBytes(of: writer.item), for: dictionary.item)
    }
}
