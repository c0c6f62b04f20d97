import Foundation
import Testing

@testable import SecureDictionary

/// Read, await, then write only if nobody changed what was read.
@Suite struct OptimisticUpdateTests {
    let store = InMemoryKeyringStore()

    func open() throws -> SecureDictionary {
        try SecureDictionary(name: "oauth", applicationID: "test.optimistic", options: .init(store: store))
    }

    @Test func commitsWhenTheExpectedEntriesAreUnchanged() throws {
        let tokens = try open()
        try tokens.setValue("r1", forKey: "refresh")
        let committed = try tokens.update(ifUnchanged: ["refresh": "r1", "claim": nil]) { entries in
            entries["refresh"] = "r2"
        }
        #expect(committed)
        #expect(try open().value(forKey: "refresh") == "r2")
    }

    /// Another writer (here planted straight into the store, as another process would) changed
    /// the refresh token after we read it: nothing is written, and the cache shows theirs.
    @Test func writesNothingWhenAnotherWriterChangedThem() throws {
        let tokens = try open()
        try tokens.setValue("r1", forKey: "refresh")
        let read = tokens["refresh"]
        store.plant(try BinaryPropertyList.encode(["refresh": "theirs"], limits: .default), for: tokens.item)
        let bytes = store.storedBytes(of: tokens.item)
        var ran = false
        let committed = try tokens.update(ifUnchanged: ["refresh": read]) { entries in
            ran = true
            entries["refresh"] = "ours"
        }
        #expect(!committed)
        #expect(!ran)
        #expect(store.storedBytes(of: tokens.item) == bytes)
        #expect(tokens["refresh"] == "theirs")
    }

    /// Many tasks race to claim one refresh token: exactly one wins.
    @Test func exactlyOneClaimWins() async throws {
        let tokens = try open()
        try tokens.setValue("r1", forKey: "refresh")
        let winners = await withTaskGroup(of: Bool.self) { group in
            for task in 0..<8 {
                group.addTask {
                    (try? await tokens.async.update(ifUnchanged: ["refresh": "r1", "claim": nil]) { entries in
                        entries["claim"] = .integer(task)
                    }) ?? false
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(winners == 1)
    }

    @Test func theBodysOwnErrorIsRethrown() throws {
        struct Abort: Error {}
        let tokens = try open()
        #expect(throws: Abort.self) { try tokens.update(ifUnchanged: [:]) { _ in throw Abort() } }
        #expect(store.calls.filter { $0 == .store }.isEmpty)
    }
}
