import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Testing

@Suite struct ChangeTests {
    let store = InMemoryKeyringStore()
    let app = "test.changes.\(UUID().uuidString)"

    func open() throws -> SecureDictionary {
        try SecureDictionary(name: "c", applicationID: app, options: .init(store: store))
    }

    /// The first `count` changes of `stream`, or fewer if they do not come within 5 s.
    func collect(_ stream: AsyncStream<SecureDictionary.Change>, count: Int) async -> [SecureDictionary.Change] {
        await withTaskGroup(of: [SecureDictionary.Change].self) { group in
            group.addTask {
                var seen: [SecureDictionary.Change] = []
                for await change in stream {
                    seen.append(change)
                    if seen.count == count { break }
                }
                return seen
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(5))
                return []
            }
            let first = await group.next() ?? []
            group.cancelAll()
            return first
        }
    }

    @Test func writesThroughAnyInstanceArriveAsPerKeyChanges() async throws {
        let observed = try open()
        try observed.setValue("old", forKey: "b")
        let stream = observed.changes()
        let writer = try open()  // another instance of the same item
        try writer.update { entries in
            entries["a"] = 1
            entries["b"] = "new"
        }
        try writer.removeValue(forKey: "a")
        let changes = await collect(stream, count: 3)
        #expect(
            changes == [
                .init(key: "a", kind: .inserted, oldValue: nil, newValue: 1),
                .init(key: "b", kind: .updated, oldValue: "old", newValue: "new"),
                .init(key: "a", kind: .removed, oldValue: 1, newValue: nil),
            ])
        #expect(!changes.map(\.description).joined().contains("new"))  // redacted
    }

    @Test func reloadFindingAForeignChangeIsReported() async throws {
        let observed = try open()
        let stream = observed.changes()
        store.plant(Array(try BinaryPropertyListCoding.encode(["k": "planted"])), for: observed.item)
        try observed.reload()
        #expect(await collect(stream, count: 1) == [.init(key: "k", kind: .inserted, oldValue: nil, newValue: "planted")])
    }

    /// Issue 28.5: events follow the stored bits. A NaN fired `updated` on every write and
    /// reload (it is not `==` to itself), while 0.0 → -0.0 and "é" → "e" + U+0301 (`==` to what
    /// they replace) fired nothing.
    @Test func changesFollowTheStoredBits() async throws {
        let observed = try open()
        try observed.update { entries in
            entries["nan"] = .real(.nan)
            entries["nested"] = ["deep": .real(.nan)]
            entries["zero"] = .real(0.0)
            entries["name"] = "\u{E9}"
        }
        let stream = observed.changes()
        try observed.setValue("x", forKey: "other")  // the NaNs stay as they are: no event for them
        try observed.reload()
        try observed.setValue(.real(-0.0), forKey: "zero")
        try observed.setValue("e\u{301}", forKey: "name")
        let changes = await collect(stream, count: 3)
        #expect(changes.map(\.key) == ["other", "zero", "name"])
        #expect(changes.map(\.kind) == [.inserted, .updated, .updated])
    }

    @Test func typedUpdatesFollowOneKey() async throws {
        let observed = try open()
        let updates = observed.updates(for: .retries)
        let task = Task {
            var values: [Int] = []
            for await value in updates {
                values.append(value)
                if values.count == 2 { break }
            }
            return values
        }
        try await Task.sleep(for: .milliseconds(50))
        try observed.setValue("ignored", forKey: "other")
        try observed.set(9, for: .retries)
        try observed.remove(.retries)
        #expect(await task.value == [9, 3])
    }
}
