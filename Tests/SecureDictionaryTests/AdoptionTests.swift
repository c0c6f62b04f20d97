import Foundation
import SecureDictionaryAdoption
import Synchronization
import Testing

@testable import SecureDictionary

/// Adopting per-key items, the rules decided without a keyring (the integration
/// suite `Adoption` does it against real providers and the real libraries' items).
@Suite struct AdoptionTests {
    let store = ForeignItemsInMemory()
    let app = "test.adopt.\(UUID().uuidString)"

    func tokens() throws -> SecureDictionary {
        try SecureDictionary(name: "tokens", applicationID: app, options: .init(store: store))
    }

    @Test func itemsBecomeEntriesTheDictionaryIsReadBackAndTheItemsKept() throws {
        store.add(["service": "app", "username": "alice"], "a-token")
        store.add(["service": "app", "username": "bob"], Array([0xFF, 0x00, 0x01]))
        store.add(["service": "other", "username": "carol"], "not ours")
        let report = try SecureDictionary.adopt(
            ForeignItems(attributes: ["service": "app"], keyAttribute: "username"), into: "tokens", applicationID: app,
            options: .init(store: store))
        #expect(report.items.map(\.outcome) == [.adopted, .adopted])
        #expect(try tokens().snapshot == ["alice": "a-token", "bob": .data(Data([0xFF, 0x00, 0x01]))])  // UTF-8 or data
        #expect(store.count == 3)  // kept
        #expect(!report.description.contains("alice"))
    }

    @Test func aDryRunWritesNothing() throws {
        store.add(["service": "app", "username": "alice"], "a-token")
        let report = try SecureDictionary.adopt(
            ForeignItems(attributes: ["service": "app"], keyAttribute: "username"), into: "tokens", applicationID: app,
            options: .init(store: store), retire: .delete, dryRun: true)
        #expect(report.items.map(\.outcome) == [.adopted] && report.dryRun)
        #expect(try tokens().isEmpty)
        #expect(store.count == 1)
    }

    @Test func conflictsChangeNothingUnlessAPolicySaysOtherwise() throws {
        try tokens().setValue("dictionary's", forKey: "alice")
        store.add(["service": "app", "username": "alice"], "item's")
        store.add(["service": "app", "username": "bob"], "bob's")
        store.add(["service": "app", "username": "dup"], "one")
        store.add(["service": "app", "username": "dup"], "two")
        store.add(["service": "app"], "no key")
        let items = ForeignItems(attributes: ["service": "app"], keyAttribute: "username")
        let stopped = try SecureDictionary.adopt(
            items, into: "tokens", applicationID: app, options: .init(store: store), retire: .delete)
        #expect(stopped.changedNothing && stopped.conflicts.count == 4)
        #expect(try tokens().snapshot == ["alice": "dictionary's"])
        #expect(store.count == 5)

        let kept = try SecureDictionary.adopt(
            items, into: "tokens", applicationID: app, options: .init(store: store), conflicts: .keepDictionary, retire: .delete)
        #expect(!kept.changedNothing && kept.conflicts.count == 4)
        #expect(try tokens().snapshot == ["alice": "dictionary's", "bob": "bob's"])
        #expect(store.count == 4)  // only bob's item retired

        let taken = try SecureDictionary.adopt(
            items, into: "tokens", applicationID: app, options: .init(store: store), conflicts: .takeItem, retire: .delete)
        #expect(taken.conflicts.count == 3)  // two items of one key, and one with none, stay conflicts
        #expect(try tokens()["alice"] == "item's")
        #expect(store.count == 3)
    }

    /// A second run finds the entries there already and retires what is left: no duplicates.
    @Test func aSecondRunFinishesTheJob() throws {
        store.add(["service": "app", "username": "alice"], "a-token")
        let items = ForeignItems(attributes: ["service": "app"], keyAttribute: "username")
        try SecureDictionary.adopt(items, into: "tokens", applicationID: app, options: .init(store: store))
        let second = try SecureDictionary.adopt(
            items, into: "tokens", applicationID: app, options: .init(store: store), retire: .delete)
        #expect(second.items.map(\.outcome) == [.alreadyAdopted])
        #expect(second.items.map(\.retirement) == [.deleted])
        #expect(store.count == 0)
        #expect(try tokens().snapshot == ["alice": "a-token"])
    }

    /// An item whose keyring asks its user before this client reads it (KeePassXC) is
    /// reported, never read and never retired; the others of the run are adopted.
    @Test func anItemThatAsksItsUserIsReportedAndLeftAlone() throws {
        store.add(["service": "app", "username": "alice"], "a-token")
        store.add(["service": "app", "username": "bob"], "b-token")
        store.askingTheUser = ["bob"]
        let report = try SecureDictionary.adopt(
            ForeignItems(attributes: ["service": "app"], keyAttribute: "username"), into: "tokens", applicationID: app,
            options: .init(store: store), retire: .delete)
        #expect(report.items.map(\.key) == ["bob", "alice"])
        #expect(report.items.map(\.outcome) == [.needsConfirmation, .adopted])
        #expect(report.items.map(\.retirement) == [.kept, .deleted])
        #expect(report.description.contains("asking their user 1"))
        #expect(try tokens().snapshot == ["alice": "a-token"])
        #expect(store.secret(of: ["service": "app", "username": "bob"]) == Array("b-token".utf8))
    }

    /// An item changed after it was read is kept, and said so.
    @Test func anItemChangedSinceAdoptedIsKept() throws {
        store.add(["service": "app", "username": "alice"], "old")
        store.changesAfterFirstRead = true  // another program writes it before it is retired
        let report = try SecureDictionary.adopt(
            ForeignItems(attributes: ["service": "app"], keyAttribute: "username"), into: "tokens", applicationID: app,
            options: .init(store: store), retire: .delete)
        #expect(report.items.map(\.retirement) == [.changedSinceAdopted])
        #expect(store.count == 1)
    }

    @Test func qtKeychainBase64IsData() throws {
        store.add(["server": "app", "user": "k", "type": "base64", "xdg:schema": "org.qt.keychain"], "AAEC/w==")
        store.add(["server": "app", "user": "t", "type": "plaintext", "xdg:schema": "org.qt.keychain"], "text")
        try SecureDictionary.adopt(.qtKeychain(service: "app"), into: "tokens", applicationID: app, options: .init(store: store))
        #expect(try tokens().snapshot == ["k": .data(Data([0, 1, 2, 255])), "t": "text"])
        // And back: each entry as the item QtKeychain would write.
        let back = ForeignItemsInMemory()
        try SecureDictionary(name: "tokens", applicationID: app, options: .init(store: back)).update {
            $0.dictionary = try tokens().snapshot
        }
        let report = try SecureDictionary.exportItems(
            .qtKeychain(service: "app"), from: "tokens", applicationID: app, options: .init(store: back))
        #expect(report.written == ["k", "t"])
        #expect(
            back.secret(of: ["server": "app", "user": "k", "type": "base64", "xdg:schema": "org.qt.keychain"])
                == Array("AAEC/w==".utf8))
    }

    @Test func exportingWritesEachEntryOnceAndLeavesOtherValuesAlone() throws {
        try tokens().update { entries in
            entries["alice"] = "a"
            entries["bob"] = "b"
            entries["count"] = 3
        }
        store.add(["service": "app", "username": "bob", "application": "Python keyring library"], "other")
        let items = ForeignItems.pythonKeyring(service: "app")
        let first = try SecureDictionary.exportItems(items, from: "tokens", applicationID: app, options: .init(store: store))
        #expect(first.written == ["alice"] && first.conflicts == ["bob"] && first.skipped == ["count"])
        let second = try SecureDictionary.exportItems(items, from: "tokens", applicationID: app, options: .init(store: store))
        #expect(second.alreadyThere == ["alice"] && second.written.isEmpty)
    }

    /// A store that keeps no per-key items is named as such, not as a missing
    /// keyring (`adopt --store credential` said "no usable keyring" while one ran).
    @Test func aStoreWithoutPerKeyItemsIsNamedAsSuch() throws {
        let files = InMemoryKeyringStore()
        #expect(throws: SecureDictionaryError.store(AdoptionError.storeHoldsNoItems(operation: "adopt"))) {
            try SecureDictionary.adopt(
                .pythonKeyring(service: "app"), into: "tokens", applicationID: app, options: .init(store: files))
        }
        #expect(throws: SecureDictionaryError.store(AdoptionError.storeHoldsNoItems(operation: "exportItems"))) {
            try SecureDictionary.exportItems(
                .pythonKeyring(service: "app"), from: "tokens", applicationID: app, options: .init(store: files))
        }
    }

    /// Before: the loser of two adoptions of the same items found them removed by the
    /// winner and failed (on gnome-keyring, as a failed encrypted session). An item gone before
    /// it is read was adopted by nobody here and is left out; one gone before its retirement is
    /// held by the dictionary, and said so.
    @Test func anItemRemovedMeanwhileIsNoFailure() throws {
        store.add(["service": "app", "username": "alice"], "a-token")
        store.add(["service": "app", "username": "bob"], "b-token")
        store.add(["service": "app", "username": "carol"], "c-token")
        store.vanishes = ["alice": 1, "bob": 2]  // alice before her first read, bob before his second
        let report = try SecureDictionary.adopt(
            ForeignItems(attributes: ["service": "app"], keyAttribute: "username"), into: "tokens", applicationID: app,
            options: .init(store: store), retire: .delete)
        #expect(report.items.map(\.key) == ["bob", "carol"])
        #expect(report.items.map(\.retirement) == [.alreadyGone, .deleted])
        #expect(try tokens().snapshot == ["bob": "b-token", "carol": "c-token"])
        #expect(store.count == 0)
    }

    /// Before: a mistyped service matched nothing, and an empty dictionary was created.
    @Test func nothingMatchedCreatesNothing() throws {
        for dryRun in [true, false] {
            let report = try SecureDictionary.adopt(
                .pythonKeyring(service: "no-such-service"), into: "tokens", applicationID: app, options: .init(store: store),
                dryRun: dryRun)
            #expect(report.items.isEmpty)
        }
        #expect(try SecureDictionary.names(applicationID: app, options: .init(store: store)).isEmpty)
    }

    /// Two keys that are one text in two Unicode forms (NFC "é", NFD "e" and a
    /// combining accent) are one key of a dictionary (Swift compares strings so), and
    /// `export-items` gave one item back for two. They are a conflict: nothing changes.
    @Test func keysDifferingOnlyInUnicodeFormAreAConflict() throws {
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        store.add(["service": "app", "username": composed], "same")
        store.add(["service": "app", "username": decomposed], "same")
        let items = ForeignItems(attributes: ["service": "app"], keyAttribute: "username")
        let report = try SecureDictionary.adopt(items, into: "tokens", applicationID: app, options: .init(store: store))
        #expect(report.conflicts.count == 2 && report.changedNothing)
        for item in report.conflicts {
            guard case .conflict(let reason) = item.outcome else { continue }
            #expect(reason.contains("Unicode"), "\(reason)")
        }
        #expect(try tokens().isEmpty)

        // The dictionary holding the key in the other form: a conflict too (retiring the item
        // would leave its library nothing under the spelling it asks for).
        let single = ForeignItemsInMemory()
        single.add(["service": "app", "username": decomposed], "same")
        try SecureDictionary(name: "tokens", applicationID: app, options: .init(store: single)).setValue("same", forKey: composed)
        let again = try SecureDictionary.adopt(
            items, into: "tokens", applicationID: app, options: .init(store: single), retire: .delete)
        #expect(again.conflicts.count == 1 && single.count == 1, "\(again.items)")
    }

    /// Before: a key holding NUL (which `import` accepts) was written as the item of the
    /// key cut at the NUL, and counted written. It is refused, and nothing is written for it.
    @Test func aKeyHoldingNULIsRefusedByExport() throws {
        try tokens().update { entries in
            entries["a\u{0}b"] = "hidden"
            entries["plain"] = "p"
        }
        let report = try SecureDictionary.exportItems(
            .pythonKeyring(service: "app"), from: "tokens", applicationID: app, options: .init(store: store))
        #expect(report.written == ["plain"] && report.refused == ["a\u{0}b"])
        #expect(store.count == 1)
        #expect(report.description.contains("refused 1") && !report.description.contains("hidden"))
    }
}

/// An in-memory store of dictionaries and of per-key items.
final class ForeignItemsInMemory: ForwardingStore, ForeignItemStore, Sendable {
    let inner = InMemoryKeyringStore()
    private let items = Mutex<[(path: String, attributes: [String: String], secret: [UInt8])]>([])
    private let serial = Atomic<Int>(0)
    private let changing = Atomic<Bool>(false)
    private let reads = Mutex<[String: Int]>([:])

    /// Each item's secret changes between its first read and its second (another program).
    var changesAfterFirstRead: Bool {
        get { changing.load(ordering: .relaxed) }
        set { changing.store(newValue, ordering: .relaxed) }
    }

    var count: Int { items.withLock { $0.count } }

    /// Items (by the value of `username`) removed by another program just before their read
    /// number N (1: the read of adoption, 2: the check before retiring).
    var vanishes: [String: Int] {
        get { vanishing.withLock { $0 } }
        set { vanishing.withLock { $0 = newValue } }
    }
    private let vanishing = Mutex<[String: Int]>([:])

    /// Items (by the value of `username`) whose keyring asks its user before they are read.
    var askingTheUser: Set<String> {
        get { asking.withLock { $0 } }
        set { asking.withLock { $0 = newValue } }
    }
    private let asking = Mutex<Set<String>>([])

    func add(_ attributes: [String: String], _ secret: String) { add(attributes, Array(secret.utf8)) }

    func add(_ attributes: [String: String], _ secret: [UInt8]) {
        let path = "/item/\(serial.add(1, ordering: .relaxed).newValue)"
        items.withLock { $0.append((path, attributes, secret)) }
    }

    func secret(of attributes: [String: String]) -> [UInt8]? {
        items.withLock { items in items.first { $0.attributes == attributes }?.secret }
    }

    func foreignItems(matching attributes: [String: String], in collection: KeyringCollection, timeout: Duration)
        throws(SecureDictionaryError) -> [ForeignItem]
    {
        items.withLock { items in
            items.filter { item in attributes.allSatisfy { item.attributes[$0.key] == $0.value } }
                .map { item in
                    let asks = item.attributes["username"].map(askingTheUser.contains) ?? false
                    return ForeignItem(
                        path: item.path, attributes: item.attributes, collection: "/memory", needsConfirmation: asks)
                }
        }
    }

    func foreignSecret(of item: ForeignItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes {
        if item.needsConfirmation { Issue.record("read an item whose keyring asks its user first") }
        let read = reads.withLock { reads in
            reads[item.path, default: 0] += 1
            return reads[item.path]!
        }
        if let user = item.attributes["username"], vanishes[user] == read {
            items.withLock { $0.removeAll { $0.path == item.path } }
        }
        if read == 2, changesAfterFirstRead {
            items.withLock { items in
                if let index = items.firstIndex(where: { $0.path == item.path }) { items[index].secret = Array("changed".utf8) }
            }
        }
        // gnome-keyring answers a removed item's path with no secret and no error, which reads
        // as a session that could not decrypt it.
        guard let secret = items.withLock({ $0.first { $0.path == item.path }?.secret }) else {
            throw .sessionRejected(reason: "a secret arrived that the session could not decrypt")
        }
        return SecretBytes(copying: secret)
    }

    func deleteForeign(_ item: ForeignItem, timeout: Duration) throws(SecureDictionaryError) {
        items.withLock { $0.removeAll { $0.path == item.path } }
    }

    func createForeign(
        attributes: [String: String], label: String, secret: SecretBytes, contentType: String,
        in collection: KeyringCollection, timeout: Duration
    ) throws(SecureDictionaryError) -> ForeignItem {
        let path = "/item/\(serial.add(1, ordering: .relaxed).newValue)"
        items.withLock { $0.append((path, attributes, secret.array)) }
        return ForeignItem(path: path, attributes: attributes, collection: "/memory")
    }
}
