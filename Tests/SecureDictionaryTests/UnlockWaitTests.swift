import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

/// Waiting for the keyring to be unlocked, without a prompt.
@Suite struct UnlockWaitTests {
    @Test func waitsUntilTheStoreIsUnlockedThenLoads() async throws {
        let store = InMemoryKeyringStore()
        let options = SecureDictionary.Options(store: store)
        let settings = try SecureDictionary(name: "wait", applicationID: "test.unlock", options: options)
        try settings.setValue("v", forKey: "k")
        store.setLocked(true)
        store.plant(try BinaryPropertyListCoding.encode(["k": "changed while locked"]).map { $0 }, for: settings.item)
        let waiter = Task { try await settings.waitUntilUnlocked(checkingEvery: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(settings["k"] == "v")  // still waiting: the keyring is locked, nothing reloaded
        store.setLocked(false)
        try await waiter.value
        #expect(settings["k"] == "changed while locked")  // reloaded once unlocked
    }

    @Test func opensWhenUnlocked() async throws {
        let store = InMemoryKeyringStore()
        store.setLocked(true)
        let options = SecureDictionary.Options(store: store)
        let opening = Task {
            try await SecureDictionary.Async.openWhenUnlocked(
                name: "wait", applicationID: "test.unlock.open",
                options: options, checkingEvery: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(60))
        store.setLocked(false)
        #expect(try await opening.value.isEmpty)
    }

    @Test func cancellingEndsTheWait() async throws {
        let store = InMemoryKeyringStore()
        store.setLocked(true)
        let options = SecureDictionary.Options(store: store)
        let opening = Task {
            try await SecureDictionary.Async.openWhenUnlocked(name: "wait", applicationID: "test.unlock.cancel", options: options)
        }
        try await Task.sleep(for: .milliseconds(50))
        opening.cancel()
        await #expect(throws: SecureDictionaryError.cancelled) { try await opening.value }
    }

    @Test func otherErrorsEndTheWait() async throws {
        let store = InMemoryKeyringStore()
        store.setLocked(true)
        store.failCall(number: 2, with: .serviceUnavailable(reason: "gone"))
        let options = SecureDictionary.Options(store: store)
        await #expect(throws: SecureDictionaryError.serviceUnavailable(reason: "gone")) {
            try await SecureDictionary.Async.openWhenUnlocked(
                name: "wait", applicationID: "test.unlock.error",
                options: options, checkingEvery: .milliseconds(10))
        }
    }
}
