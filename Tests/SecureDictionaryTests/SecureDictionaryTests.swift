import Foundation
import Synchronization
import Testing

@testable import SecureDictionary

/// The dictionary's logic against the in-memory store: fast, and able to fail on purpose.
/// Everything about the keyring itself is in KeyringIntegrationTests.
@Suite struct SecureDictionaryTests {
    let store = InMemoryKeyringStore()
    var options: SecureDictionary.Options { .init(store: store) }
    let appID = "test.app.\(UUID().uuidString)"

    func open(_ name: String? = "settings") throws -> SecureDictionary {
        try SecureDictionary(name: name, applicationID: appID, options: options)
    }

    func item(_ name: String? = "settings") throws -> KeyringItem {
        try KeyringItem(dictionaryName: name, applicationID: appID)
    }

    func stored(_ name: String? = "settings") throws -> [String: PropertyListValue]? {
        try store.storedBytes(of: item(name)).map { try BinaryPropertyList.decode($0, limits: .default) }
    }

    @Test func itemNameFollowsTheContract() throws {
        #expect(try item("settings").name == "\(appID).__SecureDictionary__.settings")
        #expect(try item(nil).name == "\(appID).__SecureDictionary__")
        #expect(
            try item(nil).attributes == [
                "service": "\(appID).__SecureDictionary__", "application": appID, "dictionary": "",
                "xdg:schema": "io.github.securedictionary.Dictionary",
            ])
    }

    @Test func startsEmptyOnlyWhenTheStoreSaysThereIsNoItem() throws {
        let settings = try open()
        #expect(settings.isEmpty)
        #expect(store.calls == [.load])
        #expect(try stored() == nil)  // opening writes nothing
    }

    @Test func writesReachTheStoreAndReadsComeFromTheCache() throws {
        let settings = try open()
        try settings.setValue("s3cr3t", forKey: "token")
        try settings.setValue(3, forKey: "retries")
        settings["ratio"] = 0.5
        // Each write checks the stored item first, then writes.
        #expect(store.calls == [.load, .load, .store, .load, .store, .load, .store])
        #expect(settings["token"]?.stringValue == "s3cr3t")
        #expect(settings["retries"] == .integer(3))
        #expect(settings.count == 3)
        #expect(store.calls.count == 7)  // reads made no call
        #expect(try stored() == settings.snapshot)

        #expect(try settings.removeValue(forKey: "token") == .string("s3cr3t"))
        #expect(try stored()?["token"] == nil)
        try settings.removeAll()
        #expect(try stored() == [:])
        #expect(settings.isEmpty)
    }

    @Test func typesStayApartAfterAFreshLoad() throws {
        let date = Date(timeIntervalSinceReferenceDate: 123_456.789_012_345)
        let values: [String: PropertyListValue] = [
            "int": 1, "real": 1.0, "bool": true, "string": "1", "date": .date(date),
            "data": .data(Data([0, 1, 255])), "array": [1, "two", [3.0]], "dict": ["nested": ["deep": false]],
            "empty": "", "emoji": "🔑 ключ", "negative": -42, "zero": .real(-0.0),
        ]
        let settings = try open()
        try settings.update { $0.dictionary = values }
        let fresh = try SecureDictionary(name: "settings", applicationID: appID, options: .init(store: InMemoryKeyringStore()))
        #expect(fresh.isEmpty)  // a different store is a different keyring
        let reopened = try SecureDictionary(name: "settings", applicationID: appID, options: .init(store: store))
        #expect(try reopened.entries() == values)  // the same item, loaded from the store
        try settings.reload()
        #expect(settings.snapshot == values)
        #expect(settings["date"]?.dateValue == date)
        #expect(settings["real"]?.integerValue == nil)
    }

    @Test func updateIsOneWriteAndAllOrNothing() throws {
        let settings = try open()
        try settings.update { entries in
            for index in 0..<100 { entries["k\(index)"] = .integer(index) }
        }
        #expect(store.calls == [.load, .load, .store])  // open; check, one write
        #expect(settings.count == 100)

        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try settings.update { entries in
                entries["k0"] = "changed"
                throw Abort()
            }
        }
        #expect(settings["k0"] == .integer(0))
        #expect(store.calls == [.load, .load, .store, .load])  // the aborted update wrote nothing
    }

    @Test func lockedIsNeverEmpty() throws {
        let settings = try open()
        try settings.setValue("v", forKey: "k")
        store.setLocked(true)
        #expect(throws: SecureDictionaryError.locked) { try open("never-loaded") }
        #expect(throws: SecureDictionaryError.locked) { try settings.reload() }
        #expect(settings["k"] == "v")  // the failed reload kept what was last known
        store.setLocked(false)
        #expect(try open()["k"] == "v")
        #expect(try open("never-loaded").isEmpty)
    }

    @Test func corruptBlobThrowsAndIsNeverOverwritten() throws {
        let garbage = Array("bplist00 not really".utf8)
        store.plant(garbage, for: try item())
        #expect(throws: SecureDictionaryError.self) { try open() }
        #expect(store.storedBytes(of: try item()) == garbage)

        // An instance that loaded before the blob went bad must not write over it either.
        store.plant(nil, for: try item())
        let settings = try open()
        store.plant(garbage, for: try item())
        #expect { try settings.setValue(1, forKey: "k") } throws: { error in
            if case SecureDictionaryError.corrupt = error { return true }
            return false
        }
        #expect(store.storedBytes(of: try item()) == garbage)
        #expect(try SecureDictionary.delete(name: "settings", applicationID: appID, options: options))
        #expect(try open().isEmpty)
    }

    @Test func unsupportedVersionIsTyped() throws {
        store.plant(Array("bplist15".utf8) + [UInt8](repeating: 0, count: 40), for: try item())
        #expect(throws: SecureDictionaryError.unsupportedFormatVersion("15")) { try open() }
    }

    @Test(arguments: [
        SecureDictionaryError.locked, .serviceUnavailable(reason: "test"), .keyring(domain: "d", code: 1, message: "rejected"),
    ])
    func definiteWriteFailureLeavesCacheEqualToStore(error: SecureDictionaryError) throws {
        let settings = try open()
        try settings.setValue("old", forKey: "k")
        store.failNextCalls(with: error)
        #expect(throws: error) { try settings.setValue("new", forKey: "k") }
        #expect(settings["k"] == "old")
        #expect(try stored()?["k"] == "old")
    }

    @Test(arguments: [SecureDictionaryError.timedOut, .connectionLost], [false, true])
    func unknownOutcomeMakesTheInstanceReload(error: SecureDictionaryError, writesAnyway: Bool) throws {
        let settings = try open()
        try settings.setValue("old", forKey: "k")
        store.failCall(number: 2, with: error, writesAnyway: writesAnyway)  // the write, after its check
        #expect(throws: error) { try settings.setValue("new", forKey: "k") }
        let callsBefore = store.calls.count
        #expect(settings["k"] == "old")  // non-throwing reads: the last known state, no call
        #expect(store.calls.count == callsBefore)
        #expect(try settings.value(forKey: "k") == (writesAnyway ? "new" : "old"))  // what the store really holds
        #expect(store.calls.count == callsBefore + 1)  // found by reloading
        #expect(settings["k"] == (writesAnyway ? "new" : "old"))
    }

    @Test func tooLargeIsRejectedWithoutAWrite() throws {
        var options = options
        options.maximumSize = 1_000
        let settings = try SecureDictionary(name: "settings", applicationID: appID, options: options)
        try settings.setValue(.data(Data(count: 100)), forKey: "small")
        let calls = store.calls
        #expect { try settings.setValue(.data(Data(count: 1_000)), forKey: "big") } throws: { error in
            if case SecureDictionaryError.tooLarge(_, 1_000) = error { return true }
            return false
        }
        #expect(store.calls == calls + [.load])  // the check of the stored item, and no write
        #expect(settings["big"] == nil)
        #expect(settings.count == 1)
    }

    @Test func oversizedStoredBlobIsRejectedByLength() throws {
        store.plant([UInt8](repeating: 0x41, count: 2_000), for: try item())
        var options = options
        options.maximumSize = 1_000
        #expect(throws: SecureDictionaryError.tooLarge(size: 2_000, limit: 1_000)) {
            try SecureDictionary(name: "settings", applicationID: appID, options: options)
        }
    }

    @Test(arguments: ["", String(repeating: "n", count: 256), "tab\there", "nul\u{0}", "del\u{7F}", "c1\u{85}"])
    func invalidNamesFailBeforeAnyCall(name: String) {
        #expect { try open(name) } throws: { error in
            if case SecureDictionaryError.invalidName = error { return true }
            return false
        }
        #expect { try SecureDictionary(name: "ok", applicationID: name, options: options) } throws: { error in
            if case SecureDictionaryError.invalidName = error { return true }
            return false
        }
        #expect(store.calls.isEmpty)
    }

    @Test func instancesOfOneItemShareState() throws {
        let first = try open()
        let second = try open()
        try first.setValue("shared", forKey: "k")
        #expect(second["k"] == "shared")
        // The second instance checked the stored item and shares the first one's state.
        #expect(store.calls == [.load, .load, .load, .store])
        try second.reload()
        #expect(first["k"] == "shared")  // one cache for both
        #expect(store.calls == [.load, .load, .load, .store, .load])
    }

    @Test func subscriptSetterFailureIsReportedNotSwallowed() throws {
        let failures = Failures()
        var options = options
        options.failureHandler = { failures.append($0) }
        let settings = try SecureDictionary(name: "settings", applicationID: appID, options: options)
        store.failNextCalls(with: .locked)
        settings["k"] = "v"
        #expect(failures.all == [.locked])
        #expect(settings["k"] == nil)
    }

    /// A failed load is an error, never empty, and swallows nothing.
    @Test func aFailedLoadIsAnErrorNeverEmpty() throws {
        let failures = Failures()
        var options = options
        options.failureHandler = { failures.append($0) }
        let settings = try SecureDictionary(name: "settings", applicationID: appID, options: options)
        try settings.setValue("v", forKey: "k")
        store.setLocked(true)
        #expect(throws: SecureDictionaryError.locked) { try settings.reload() }
        #expect(throws: SecureDictionaryError.locked) {
            try SecureDictionary(name: "settings", applicationID: appID, options: options)
        }
        #expect(settings["k"] == "v")  // what was loaded stays
        #expect(failures.all.isEmpty)  // nothing was swallowed on the way
    }

    @Test func namesAndDelete() throws {
        _ = try open(nil).setValue(1, forKey: "a")
        try open("alpha").setValue(1, forKey: "a")
        try open("beta").setValue(1, forKey: "a")
        #expect(try SecureDictionary.names(applicationID: appID, options: options) == ["", "alpha", "beta"])
        let listed = try SecureDictionary.items(applicationID: appID, options: options)
        #expect(
            listed.map(\.item.name) == [
                "\(appID).__SecureDictionary__", "\(appID).__SecureDictionary__.alpha",
                "\(appID).__SecureDictionary__.beta",
            ])
        #expect(try SecureDictionary.items(options: options).count == 3)
        #expect(try SecureDictionary.delete(name: "alpha", applicationID: appID, options: options))
        #expect(try !SecureDictionary.delete(name: "alpha", applicationID: appID, options: options))
        #expect(try SecureDictionary.names(applicationID: appID, options: options) == ["", "beta"])
    }

    /// Releasing the last instance wipes the `Data` the cache owns; a caller's copy is left alone.
    @Test func releasingTheLastInstanceLeavesACallersCopyAlone() throws {
        var settings: SecureDictionary? = try open()
        try settings!.setValue(.data(Data(repeating: 0xAB, count: 64)), forKey: "key")
        var copy = settings!.snapshot
        settings = nil  // the state goes: its cache is wiped
        #expect(copy["key"]?.dataValue == Data(repeating: 0xAB, count: 64))
        copy.removeAll()
        #expect(try open()["key"]?.dataValue == Data(repeating: 0xAB, count: 64))  // the keyring still has it
    }

    @Test func threadsLoseNoUpdates() async throws {
        let instances = try (0..<4).map { _ in try open() }
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<16 {
                group.addTask {
                    let dictionary = instances[thread % instances.count]
                    for index in 0..<50 {
                        try? dictionary.setValue(.integer(index), forKey: "t\(thread)-\(index)")
                        try? dictionary.update { entries in
                            entries["counter"] = .integer((entries["counter"]?.integerValue ?? 0) + 1)
                        }
                    }
                }
            }
        }
        let fresh = try stored()
        #expect(fresh?.count == 16 * 50 + 1)
        #expect(fresh?["counter"] == .integer(16 * 50))
        #expect(instances[0].snapshot == fresh)
    }
}

/// Collects errors from a failure handler.
final class Failures: Sendable {
    private let storage = Mutex<[SecureDictionaryError]>([])
    var all: [SecureDictionaryError] { storage.withLock { $0 } }
    func append(_ error: SecureDictionaryError) { storage.withLock { $0.append(error) } }
}
