import Foundation
import ProcessSpawning
import SecureDictionary
import SecureDictionaryTestSupport
import Synchronization
import Testing

/// A store whose writes take a while, to cancel a task in the middle of one.
final class SlowStore: ForwardingStore {
    let inner = InMemoryKeyringStore()
    let delay: Duration
    init(delay: Duration) { self.delay = delay }
    func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        Thread.sleep(forTimeInterval: delay.seconds)
        try inner.store(secret, for: item, timeout: timeout)
    }
}

/// A store whose writes wait at a gate the test opens: a write stays in flight exactly as long
/// as a test wants, with nothing timed.
final class GatedStore: ForwardingStore {
    let inner = InMemoryKeyringStore()
    /// Signalled when a write reaches the gate, and when it has passed the inner store.
    let entered = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    let passed = DispatchSemaphore(value: 0)
    func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
        entered.signal()
        gate.wait()
        defer { passed.signal() }
        try inner.store(secret, for: item, timeout: timeout)
    }
}

extension DispatchSemaphore {
    /// Waits on a thread of its own, so that no thread of the cooperative pool blocks.
    func arrival() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                self.wait()
                done.resume()
            }
        }
    }
}

@Suite struct AsyncTests {
    @Test func asyncFormsDoWhatTheSyncOnesDo() async throws {
        let options = SecureDictionary.Options(store: InMemoryKeyringStore())
        let app = "test.async.\(UUID().uuidString)"
        let settings = try await SecureDictionary.Async.open(name: "a", applicationID: app, options: options)
        try await settings.async.setValue("v", forKey: "k")
        try await settings.async.set(7, for: .retries)
        let counted = try await settings.async.update { entries in
            entries["n"] = 1
            return entries.count
        }
        #expect(counted == 3)
        #expect(try await settings.async.value(forKey: "k") == "v")
        #expect(try await settings.async.value(for: .retries) == 7)
        #expect(try await settings.async.removeValue(forKey: "k") == "v")
        try await settings.async.reload()
        #expect(try await SecureDictionary.Async.names(applicationID: app, options: options) == ["a"])
        #expect(try await SecureDictionary.Async.items(applicationID: app, options: options).count == 1)
        try await settings.async.removeAll()
        #expect(settings.isEmpty)
        #expect(try await SecureDictionary.Async.delete(name: "a", applicationID: app, options: options))
        try settings.setValue(1, forKey: "sync")  // sync calls still compile inside async code
    }

    /// The async API takes and gives plain values, as the sync one does (this did
    /// not compile: "cannot convert value of type 'Date' to expected argument type 'Value'").
    @Test func asyncFormsTakePlainValues() async throws {
        let options = SecureDictionary.Options(store: InMemoryKeyringStore())
        let settings = try await SecureDictionary.Async.open(
            name: "plain", applicationID: "test.async.plain.\(UUID().uuidString)", options: options)
        let seen = Date(timeIntervalSinceReferenceDate: 812_345_678.25)
        try await settings.async.setValue(seen, forKey: "seen")
        try await settings.async.setValue(3, forKey: "retries")
        try await settings.async.setValue(["a", "b"], forKey: "tags")
        try await settings.async.setValue(UUID?.none, forKey: "retries")  // nil removes
        #expect(try await settings.async.value(forKey: "seen", as: Date.self) == seen)
        #expect(try await settings.async.value(forKey: "tags", as: [String].self) == ["a", "b"])
        #expect(try await settings.async.value(forKey: "retries", as: Int.self) == nil)
        await #expect(throws: SecureDictionaryError.typeMismatch(expected: "Int", found: "date")) {
            try await settings.async.value(forKey: "seen", as: Int.self)
        }
    }

    @Test func bodyErrorsComeBackUnchanged() async throws {
        struct Abort: Error {}
        let settings = try SecureDictionary(name: "a", applicationID: "test.async", options: .init(store: InMemoryKeyringStore()))
        await #expect(throws: Abort.self) { try await settings.async.update { _ in throw Abort() } }
    }

    /// Cancelling ends the caller's wait while the write is still in flight (held at the
    /// store's gate: had the task waited for the write, it would never end, and the time
    /// limit fails the test); the write goes on, and once it lands cache and store agree.
    @Test(.timeLimit(.minutes(1))) func cancellationEndsTheWaitAndKeepsCacheEqualToStore() async throws {
        let store = GatedStore()
        let settings = try SecureDictionary(
            name: "slow", applicationID: "test.async.\(UUID().uuidString)",
            options: .init(store: store))
        let task = Task { try await settings.async.setValue("new", forKey: "k") }
        await store.entered.arrival()
        task.cancel()
        let result = await task.result
        #expect(throws: SecureDictionaryError.cancelled) { try result.get() }
        #expect(settings["k"] == nil)  // not written yet, so not in the cache either
        store.gate.signal()
        await store.passed.arrival()
        // The cache changes right after the store returns, on the keyring call's own queue.
        var polls = 0
        while settings["k"] == nil, polls < 1_000 {
            try await Task.sleep(for: .milliseconds(10))
            polls += 1
        }
        #expect(settings["k"] == "new")
        #expect(
            try store.inner.storedBytes(of: settings.item).map { try BinaryPropertyListCoding.decode(Data($0)) } == ["k": "new"])
    }

    @Test func alreadyCancelledTaskDoesNotWait() async throws {
        let settings = try SecureDictionary(
            name: "a", applicationID: "test.async", options: .init(store: SlowStore(delay: .seconds(1))))
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await settings.async.setValue("x", forKey: "k")
        }
        await #expect(throws: SecureDictionaryError.cancelled) { try await task.value }
    }
}
