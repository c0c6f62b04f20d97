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

    /// Events follow the stored bits. A NaN once fired `updated` on every write and
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

    @Test func changesForAKeyDeliverThatEntryAlone() async throws {
        let observed = try open()
        try observed.setValue("old", forKey: "watched")
        let stream = observed.changes(forKey: "watched")
        let writer = try open()  // another instance of the same item
        try writer.setValue(1, forKey: "other")
        try writer.update { entries in
            entries["other"] = 2
            entries["watched"] = "new"
        }
        try writer.setValue(3, forKey: "other")
        try writer.removeValue(forKey: "watched")
        #expect(
            await collect(stream, count: 2) == [
                .init(key: "watched", kind: .updated, oldValue: "old", newValue: "new"),
                .init(key: "watched", kind: .removed, oldValue: "new", newValue: nil),
            ])
    }

    @Test func aReloadReachesTheStreamOfTheKeyItChangedOnly() async throws {
        let observed = try open()
        let watched = observed.changes(forKey: "watched")
        let every = observed.changes()
        store.plant(Array(try BinaryPropertyListCoding.encode(["other": "planted"])), for: observed.item)
        try observed.reload()
        #expect(await collect(every, count: 1).map(\.key) == ["other"])  // loaded, and told to every key's stream
        store.plant(Array(try BinaryPropertyListCoding.encode(["other": "planted", "watched": "v"])), for: observed.item)
        try observed.reload()
        #expect(await collect(watched, count: 1) == [.init(key: "watched", kind: .inserted, oldValue: nil, newValue: "v")])
    }

    /// A key names its entry by Unicode scalars, as the subscript reads it: "é" as U+00E9 and
    /// as "e" + U+0301 are two entries, and each stream hears its own.
    @Test func aKeysStreamMatchesItsEntryByItsScalars() async throws {
        let observed = try open()
        let composed = observed.changes(forKey: "\u{E9}")
        try observed.setValue("decomposed", forKey: "e\u{301}")
        try observed.setValue("composed", forKey: "\u{E9}")
        let changes = await collect(composed, count: 1)
        #expect(changes.map(\.newValue) == ["composed"])
        #expect(changes.first?.key.unicodeScalars.elementsEqual("\u{E9}".unicodeScalars) == true)
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
