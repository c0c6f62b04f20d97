import Dispatch
import Foundation
import ProcessSpawning
import Synchronization
import Testing

@testable import SecureDictionary

/// A write rests on what the keyring holds, never on what this process believes it
/// holds; and one deadline bounds the whole call.
@Suite struct CheckBeforeWriteTests {
    let store = InMemoryKeyringStore()
    let appID = "test.check.\(UUID().uuidString)"

    func open(_ options: SecureDictionary.Options? = nil) throws -> SecureDictionary {
        try SecureDictionary(name: "settings", applicationID: appID, options: options ?? .init(store: store))
    }

    func stored(_ dictionary: SecureDictionary) throws -> [String: PropertyListValue]? {
        try store.storedBytes(of: dictionary.item).map { try BinaryPropertyList.decode($0, limits: .default) }
    }

    /// Another writer (another process, secret-tool, python) replaced the item after we loaded it.
    @Test func anOutsideWriteBetweenLoadAndWriteIsKept() throws {
        let settings = try open()
        try settings.setValue("ours", forKey: "a")
        let outside: [String: PropertyListValue] = ["a": "ours", "x": "theirs"]
        store.plant(try BinaryPropertyList.encode(outside, limits: .default), for: settings.item)

        try settings.setValue("also ours", forKey: "y")

        #expect(try stored(settings) == ["a": "ours", "x": "theirs", "y": "also ours"])
        #expect(settings["x"] == "theirs")  // the cache follows the store
    }

    @Test func anOutsideRemovalIsKeptToo() throws {
        let settings = try open()
        try settings.update { $0 = ["a": 1, "b": 2] }
        store.plant(try BinaryPropertyList.encode(["a": 1], limits: .default), for: settings.item)
        try settings.setValue(3, forKey: "c")
        #expect(try stored(settings) == ["a": 1, "c": 3])
    }

    /// "No write over a blob it could not decode": an undecodable blob planted after our load
    /// is never written over.
    @Test func aBlobThatBecameCorruptIsNotOverwritten() throws {
        let settings = try open()
        try settings.setValue("ours", forKey: "a")
        let garbage: [UInt8] = Array("bplist00 not really".utf8)
        store.plant(garbage, for: settings.item)
        #expect { try settings.setValue("new", forKey: "b") } throws: { error in
            if case SecureDictionaryError.corrupt = error { return true }
            return false
        }
        #expect(store.storedBytes(of: settings.item) == garbage)
    }

    /// An item deleted by someone else after our load: our write recreates it with our
    /// change alone, not with the entries we had cached.
    @Test func anOutsideDeletionIsKept() throws {
        let settings = try open()
        try settings.setValue("old", forKey: "a")
        store.plant(nil, for: settings.item)
        try settings.setValue("new", forKey: "b")
        #expect(try stored(settings) == ["b": "new"])
        #expect(settings.snapshot == ["b": "new"])
    }

    @Test func aWriteThatChangesNothingIsNotSent() throws {
        let settings = try open()
        try settings.setValue("same", forKey: "a")
        let calls = store.calls
        try settings.setValue("same", forKey: "a")
        try settings.removeValue(forKey: "missing")
        #expect(store.calls == calls + [.load, .load])  // two checks, no write
    }

    /// Threads queued behind a write stuck on the keyring fail at their own deadline, not
    /// one after another (the old per-call timeout made the k-th thread wait k timeouts).
    @Test func threadsQueuedBehindAStuckWriteFailAtTheirOwnDeadline() throws {
        let stuck = StuckWritesStore()
        let timeout = Duration.milliseconds(300)
        let settings = try open(.init(timeout: timeout, store: stuck, failureHandler: { _ in }))
        let threads = 4
        let finished = Mutex<[Duration]>([])
        let done = DispatchGroup()
        let start = ContinuousClock.now
        for index in 0..<threads {  // all at once (concurrentPerform would run only one per core)
            done.enter()
            Thread {
                #expect(throws: SecureDictionaryError.timedOut) { try settings.setValue(.integer(index), forKey: "k\(index)") }
                finished.withLock { $0.append(ContinuousClock.now - start) }
                done.leave()
            }.start()
        }
        done.wait()
        let slowest = finished.withLock { $0.max() ?? .zero }
        // Each thread's deadline is 0.3 s after it started; allow scheduling slack, far less
        // than the 1.2 s the fourth thread would have waited behind the other three before.
        #expect(slowest < timeout * 2, "slowest thread returned after \(slowest)")
    }

    /// A read of a loaded cache never waits for a write in progress.
    @Test func cachedReadsDoNotWaitForAWriteInProgress() throws {
        let stuck = StuckWritesStore()
        let settings = try open(.init(timeout: .seconds(2), store: stuck, failureHandler: { _ in }))
        let writer = Thread { _ = try? settings.setValue("new", forKey: "k") }
        writer.start()
        #expect(stuck.waitUntilAWriteIsStuck(timeout: .seconds(2)))
        #expect(settings["k"] == nil)  // answered from the cache while the write hangs
        #expect(stuck.writeIsStuck)  // …and the write was still in progress
        stuck.release()
    }

    // MARK: Large dictionaries (200 entries; once encoded ahead of the check)

    func openLarge(_ options: SecureDictionary.Options? = nil) throws -> SecureDictionary {
        let settings = try open(options)
        let count = 200
        try settings.update { entries in
            for index in 0..<count { entries["key\(index)"] = .integer(index) }
        }
        return settings
    }

    @Test func aLargeDictionaryKeepsAnOutsideWrite() throws {
        let settings = try openLarge()
        var outside = try #require(try stored(settings))
        outside["x"] = "theirs"
        outside["key0"] = "changed by them"
        store.plant(try BinaryPropertyList.encode(outside, limits: .default), for: settings.item)

        let old = try settings.removeValue(forKey: "key0")
        try settings.setValue("ours", forKey: "y")

        #expect(old == "changed by them")  // the change ran on what is stored, not on the cache
        outside["key0"] = nil
        outside["y"] = "ours"
        #expect(try stored(settings) == outside)
        #expect(settings["x"] == "theirs")
    }

    @Test func aLargeDictionaryWritesItsOwnChanges() throws {
        let settings = try openLarge()
        try settings.setValue("a", forKey: "new")
        #expect(try settings.removeValue(forKey: "key1") == .integer(1))
        var expected = settings.snapshot
        #expect(try stored(settings) == expected)
        try settings.removeAll()
        expected = [:]
        #expect(try stored(settings) == expected)
    }

    @Test func aLargeDictionaryThatWouldGrowTooLargeIsNotWritten() throws {
        let settings = try openLarge()
        let before = store.storedBytes(of: settings.item)
        let limited = try open(.init(maximumSize: try #require(before).count + 10, store: store))
        #expect(throws: SecureDictionaryError.self) {
            try limited.setValue(.data(Data(count: 100)), forKey: "big")
        }
        #expect(store.storedBytes(of: settings.item) == before)
        #expect(limited["big"] == nil)
    }

    @Test func aFailedCheckLeavesALargeDictionaryAlone() throws {
        let settings = try openLarge()
        let before = store.storedBytes(of: settings.item)
        store.failNextCalls(with: .locked)
        #expect(throws: SecureDictionaryError.locked) { try settings.setValue("x", forKey: "k") }
        #expect(store.storedBytes(of: settings.item) == before)
        #expect(settings["k"] == nil)
    }
}

/// A store whose writes hang until released or until their timeout, as against a frozen daemon.
final class StuckWritesStore: ForwardingStore {
    let inner = InMemoryKeyringStore()
    private let released = DispatchSemaphore(value: 0)
    private let entered = DispatchSemaphore(value: 0)
    private let stuckCount = Atomic<Int>(0)

    var writeIsStuck: Bool { stuckCount.load(ordering: .acquiring) > 0 }

    func waitUntilAWriteIsStuck(timeout: Duration) -> Bool {
        entered.wait(timeout: .now() + .milliseconds(Int(timeout.components.seconds * 1_000))) == .success
    }

    func release() { released.signal() }

    func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        stuckCount.add(1, ordering: .acquiringAndReleasing)
        defer { stuckCount.subtract(1, ordering: .acquiringAndReleasing) }
        entered.signal()
        guard released.wait(timeout: timeout.fromNow) == .success else { throw .timedOut }
        try inner.store(secret, for: item, timeout: timeout)
    }
}

/// The name of the cross-process writer lock on the session bus.
@Suite struct BusNameWriterLockNameTests {
    @Test func aValidApplicationIDPrefixesTheName() throws {
        let item = try KeyringItem(dictionaryName: "tokens", applicationID: "com.example.App")
        let name = BusNameWriterLock.busName(for: item)
        #expect(name.hasPrefix("com.example.App.__SecureDictionary__.h"))
        #expect(BusNameWriterLock.isValidBusName(name))
    }

    @Test(arguments: ["it.8A2E2CF0", "with space.app", "dots..twice", "ünïcode.app", "trailing."])
    func otherApplicationIDsFallBackToTheLibrarysPrefix(applicationID: String) throws {
        let item = try KeyringItem(dictionaryName: "x", applicationID: applicationID)
        let name = BusNameWriterLock.busName(for: item)
        #expect(name.hasPrefix("io.github.securedictionary.lock.h"))
        #expect(BusNameWriterLock.isValidBusName(name))
    }

    /// One collection answers to several aliases (`default` and `login` on gnome-keyring):
    /// writers that name it differently must still take one lock.
    @Test func theNameDependsOnTheItemNameAloneNotOnTheCollectionsAlias() throws {
        let first = try KeyringItem(dictionaryName: "a", applicationID: "com.example.App")
        let again = try KeyringItem(dictionaryName: "a", applicationID: "com.example.App")
        let other = try KeyringItem(dictionaryName: "b", applicationID: "com.example.App")
        let login = try KeyringItem(
            dictionaryName: "a", applicationID: "com.example.App", collection: KeyringCollection(alias: "login"))
        #expect(BusNameWriterLock.busName(for: first) == BusNameWriterLock.busName(for: again))
        #expect(BusNameWriterLock.busName(for: first) != BusNameWriterLock.busName(for: other))
        #expect(BusNameWriterLock.busName(for: first) == BusNameWriterLock.busName(for: login))
    }

    /// The documented formula (README, "The stored item"), worked by hand for one item:
    /// FNV-1a, 64 bits, of the item name's UTF-8 bytes, in lowercase hex.
    @Test func theNameIsTheDocumentedOne() throws {
        let item = try KeyringItem(dictionaryName: "a", applicationID: "com.example.App")
        #expect(BusNameWriterLock.fnv1a("") == 0xcbf2_9ce4_8422_2325)
        #expect(BusNameWriterLock.fnv1a("a") == 0xaf63_dc4c_8601_ec8c)  // FNV's published test vector
        #expect(
            BusNameWriterLock.busName(for: item)
                == "com.example.App.__SecureDictionary__.h" + String(BusNameWriterLock.fnv1a(item.name), radix: 16))
    }

    @Test func aLongApplicationIDFallsBack() throws {
        let long = (0..<20).map { "element\($0)" }.joined(separator: ".") + String(repeating: "x", count: 60)
        let item = try KeyringItem(dictionaryName: "a", applicationID: long)
        #expect(BusNameWriterLock.busName(for: item).hasPrefix("io.github.securedictionary.lock.h"))
    }
}
