import Foundation
import SecureDictionary
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
