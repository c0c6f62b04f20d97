public import SecureDictionary

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The entries swift-configuration's `ProviderCompatTest` expects a provider to hold, as a
/// dictionary stores them (its documentation lists them; `magic` is the bytes of "magic").
///
/// ```swift
/// try dictionary.update { $0.dictionary = ProviderCompatEntries.all }
/// try await ProviderCompatTest(provider: SecureDictionaryProvider(dictionary)).runTest()
/// ```
public enum ProviderCompatEntries {
    public static let all: [String: PropertyListValue] = {
        let magic = PropertyListValue.data(Data("magic".utf8))
        let magic2 = PropertyListValue.data(Data("magic2".utf8))
        return [
            "string": "Hello", "other.string": "Other Hello",
            "int": 42, "other.int": 24,
            "double": 3.14, "other.double": 2.72,
            "bool": true, "other.bool": false,
            "bytes": magic, "other.bytes": magic2,
            "stringy.array": ["Hello", "World"], "other.stringy.array": ["Hello", "Swift"],
            "inty.array": [42, 24], "other.inty.array": [16, 32],
            "doubly.array": [3.14, 2.72], "other.doubly.array": [0.9, 1.8],
            "booly.array": [true, false], "other.booly.array": [false, true, true],
            "byteChunky.array": [magic, magic2], "other.byteChunky.array": [magic, magic2, magic],
        ]
    }()
}
