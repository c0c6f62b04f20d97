import Foundation
import Testing

@testable import SecureDictionary

/// Issue 10, finding 1 — the read rule: non-throwing reads answer from the loaded cache only;
/// they never load, never wait and never fail. After forget() they stop the program instead of
/// answering "empty", and the throwing reads load or throw. One test per read API.
@Suite struct ReadRuleTests {
    /// An item with one entry, forgotten, in a store that is locked now.
    static func forgottenWhileLocked() -> SecureDictionary {
        let store = InMemoryKeyringStore()
        let options = SecureDictionary.Options(store: store, failureHandler: { _ in })
        do {
            let settings = try SecureDictionary(name: "rule", applicationID: "test.read-rule", options: options)
            try settings.setValue("v", forKey: "k")
            settings.forget()
            store.setLocked(true)
            return settings
        } catch {
            fatalError("setup failed: \(error)")
        }
    }

    @Test func subscriptStopsInsteadOfAnsweringNil() async {
        await #expect(processExitsWith: .failure) { _ = ReadRuleTests.forgottenWhileLocked()["k"] }
    }

    @Test func keysStopInsteadOfAnsweringNone() async {
        await #expect(processExitsWith: .failure) { _ = ReadRuleTests.forgottenWhileLocked().keys }
    }

    @Test func countStopsInsteadOfAnsweringZero() async {
        await #expect(processExitsWith: .failure) { _ = ReadRuleTests.forgottenWhileLocked().count }
    }

    @Test func isEmptyStopsInsteadOfAnsweringTrue() async {
        await #expect(processExitsWith: .failure) { _ = ReadRuleTests.forgottenWhileLocked().isEmpty }
    }

    @Test func snapshotStopsInsteadOfAnsweringEmpty() async {
        await #expect(processExitsWith: .failure) { _ = ReadRuleTests.forgottenWhileLocked().snapshot }
    }

    @Test func iterationStopsInsteadOfIteratingNothing() async {
        await #expect(processExitsWith: .failure) {
            for _ in ReadRuleTests.forgottenWhileLocked() {}
        }
    }

    @Test func typedSubscriptStopsInsteadOfAnsweringTheDefault() async {
        await #expect(processExitsWith: .failure) {
            _ = ReadRuleTests.forgottenWhileLocked()[SecureDictionary.Key<String>("k", default: "default")]
        }
    }

    @Test func propertyWrapperStopsInsteadOfAnsweringTheDefault() async {
        await #expect(processExitsWith: .failure) {
            let wrapped = SecureStored(
                SecureDictionary.Key<String>("k", default: "default"), in: ReadRuleTests.forgottenWhileLocked())
            _ = wrapped.wrappedValue
        }
    }

    /// The throwing reads load, and throw what the load threw.
    @Test func throwingReadsThrowTheLoadsError() throws {
        let settings = Self.forgottenWhileLocked()
        #expect(!settings.isLoaded)
        #expect(throws: SecureDictionaryError.locked) { try settings.value(forKey: "k") }
        #expect(throws: SecureDictionaryError.locked) { try settings.entries() }
        #expect(throws: SecureDictionaryError.locked) { try settings.value(for: SecureDictionary.Key<String>("k", default: "d")) }
        #expect(throws: SecureDictionaryError.locked) { try SecureStored(SecureDictionary.Key<String?>("k"), in: settings).get() }
        #expect(!settings.isLoaded)
    }

    @Test func descriptionNeverStops() {
        #expect(Self.forgottenWhileLocked().description.hasSuffix("unloaded)"))
    }

    /// While loaded, non-throwing reads answer at once from memory, without any keyring call.
    @Test func loadedReadsMakeNoKeyringCall() throws {
        let store = InMemoryKeyringStore()
        let settings = try SecureDictionary(name: "rule", applicationID: "test.read-rule.loaded", options: .init(store: store))
        try settings.setValue("v", forKey: "k")
        let calls = store.calls
        store.setLocked(true)  // a keyring call now would throw
        #expect(settings["k"] == "v")
        #expect(settings.keys == ["k"])
        #expect(settings.count == 1)
        #expect(!settings.isEmpty)
        #expect(settings.snapshot == ["k": "v"])
        #expect(Array(settings).count == 1)
        #expect(settings[SecureDictionary.Key<String>("k", default: "d")] == "v")
        #expect(store.calls == calls)
    }
}
