import Foundation
import Logging
import Synchronization
import Testing

@testable import SecureDictionary

/// The write path decodes another writer's blob under the writer lock, before its write:
/// nothing is written over a blob that was not decoded. (A one-key change once decoded it
/// after the release, for speed, which made write safety rest on a splice of the stored blob,
/// since removed, accepting only blobs the decoder accepts.)
@Suite struct LockReleaseOrderTests {
    let store = RecordingCoordinatedStore()

    /// A dictionary that wrote "a", after which another writer added "x"; the events and the
    /// release hook start now, and the hook records whether "x" is decoded at the release.
    func afterAnotherWriter() throws -> SecureDictionary {
        let settings = try SecureDictionary(
            name: "settings", applicationID: "test.order.\(UUID().uuidString)", options: .init(store: store))
        try settings.setValue("ours", forKey: "a")
        store.inner.plant(try BinaryPropertyList.encode(["a": "ours", "x": "theirs"], limits: .default), for: settings.item)
        store.onRelease { [store] in
            store.events.withLock { $0.append(settings["x"] == nil ? "release, x not decoded" : "release, x decoded") }
        }
        return settings
    }

    @Test func anotherWritersBlobIsDecodedBeforeTheWriteOfAOneKeyChange() throws {
        let settings = try afterAnotherWriter()
        try settings.setValue("also ours", forKey: "y")

        #expect(store.events.withLock { $0 } == ["acquire", "load", "store", "release, x decoded"])
        #expect(settings["x"] == "theirs")
        #expect(settings["y"] == "also ours")
        let stored = try store.inner.storedBytes(of: settings.item).map { try BinaryPropertyList.decode($0, limits: .default) }
        #expect(stored == ["a": "ours", "x": "theirs", "y": "also ours"])
    }

    @Test func aFailedWriteLeavesTheCacheEqualToTheStoreAfterAnotherWriter() throws {
        let settings = try afterAnotherWriter()
        store.inner.failCall(number: 2, with: .serviceUnavailable(reason: "test"))  // the write
        #expect(throws: SecureDictionaryError.self) { try settings.setValue("lost", forKey: "y") }

        #expect(settings["x"] == "theirs")  // what the check read, decoded though nothing was written
        #expect(settings["y"] == nil)
    }
}

/// An in-memory store with a writer lock that records what happens, in order.
final class RecordingCoordinatedStore: ForwardingStore, CoordinatedStore, Sendable {
    let inner = InMemoryKeyringStore()
    /// The queue in front of its lock (one lock for every item of the store).
    let queue = LockQueue()
    let events = Mutex<[String]>([])
    private let releaseHook = Mutex<(@Sendable () -> Void)?>(nil)

    /// Clears the events and calls `hook` at every release from now on.
    func onRelease(_ hook: @escaping @Sendable () -> Void) {
        releaseHook.withLock { $0 = hook }
        events.withLock { $0 = [] }
    }

    func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes? {
        events.withLock { $0.append("load") }
        return try inner.load(item, timeout: timeout)
    }

    func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        events.withLock { $0.append("store") }
        try inner.store(secret, for: item, timeout: timeout)
    }

    package func writerLock(for item: KeyringItem, logger: Logger) -> any ItemWriterLock { Lock(store: self) }

    package func watchChanges(_ onChange: @escaping @Sendable (KeyringChange) -> Void) -> (any ChangeWatch)? { nil }

    package var place: String? { nil }

    struct Lock: ItemWriterLock {
        let store: RecordingCoordinatedStore

        func queue(until deadline: Deadline) -> LockQueue { store.queue }

        func acquire(waitingUntil deadline: Deadline, answeringBy _: Deadline) throws(SecureDictionaryError) -> Bool {
            store.events.withLock { $0.append("acquire") }
            return true
        }

        func release() { store.releaseHook.withLock { $0 }?() }
    }
}
