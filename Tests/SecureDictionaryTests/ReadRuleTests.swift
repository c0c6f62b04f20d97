import Foundation
import Synchronization
import Testing

@testable import SecureDictionary

/// The read rule: an instance is always loaded, so its non-throwing reads answer from memory
/// and never load, wait or fail; to forget the secrets, release every instance. (A former
/// `forget()` made a later non-throwing read stop the program, also from another thread, and
/// was removed.) Every read API is checked, threads included.
@Suite struct ReadRuleTests {
    /// A dictionary holding `["k": "v"]` whose keyring got locked after it loaded, and whose
    /// last write's outcome is unknown (it timed out), so nothing it holds is known current.
    static func staleWhileLocked() throws -> (SecureDictionary, InMemoryKeyringStore) {
        let store = InMemoryKeyringStore()
        let options = SecureDictionary.Options(store: store, failureHandler: { _ in })
        let settings = try SecureDictionary(name: "rule", applicationID: "test.read-rule.\(UUID())", options: options)
        try settings.setValue("v", forKey: "k")
        store.failCall(number: 2, with: .timedOut)  // the write after its check
        #expect(throws: SecureDictionaryError.timedOut) { try settings.setValue("lost", forKey: "other") }
        store.setLocked(true)
        return (settings, store)
    }

    /// Every non-throwing read of `settings`, as the entries it saw.
    static func nonThrowingReads(_ settings: SecureDictionary) -> [(String, [String: SecureDictionary.Value])] {
        let key = SecureDictionary.Key<String?>("k")
        return [
            ("subscript", settings["k"].map { ["k": $0] } ?? [:]),
            ("keys", Dictionary(uniqueKeysWithValues: settings.keys.map { ($0, "v") })),  // the keys alone
            ("count", settings.count == 1 ? ["k": "v"] : [:]),
            ("isEmpty", settings.isEmpty ? [:] : ["k": "v"]),
            ("snapshot", settings.snapshot),
            ("iteration", Dictionary(uniqueKeysWithValues: Array(settings).map { ($0.key, $0.value) })),
            ("typed subscript", settings[key].map { ["k": .string($0)] } ?? [:]),
            ("property wrapper", SecureStored(key, in: settings).wrappedValue.map { ["k": .string($0)] } ?? [:]),
        ]
    }

    @Test func nonThrowingReadsAnswerWhatWasLoadedWhenTheKeyringIsLockedAndTheLastWriteUnknown() throws {
        let (settings, store) = try Self.staleWhileLocked()
        let calls = store.calls.count
        for (read, seen) in Self.nonThrowingReads(settings) {
            #expect(seen == ["k": "v"], "\(read)")
        }
        #expect(store.calls.count == calls, "a non-throwing read made a keyring call")
    }

    /// The throwing reads load first after an unknown outcome, and throw what the load threw:
    /// never "empty".
    @Test func throwingReadsThrowTheLoadsError() throws {
        let (settings, _) = try Self.staleWhileLocked()
        #expect(throws: SecureDictionaryError.locked) { try settings.value(forKey: "k") }
        #expect(throws: SecureDictionaryError.locked) { try settings.entries() }
        #expect(throws: SecureDictionaryError.locked) { try settings.value(for: SecureDictionary.Key<String>("k", default: "d")) }
        #expect(throws: SecureDictionaryError.locked) { try SecureStored(SecureDictionary.Key<String?>("k"), in: settings).get() }
        #expect(settings.snapshot == ["k": "v"])  // and the non-throwing reads still answer
    }

    /// Threads open and release instances of one item (every other load fails) while other
    /// threads read it through every non-throwing API of instances they keep: no read stops
    /// the program, and every one sees the whole dictionary. (With `forget()`, one thread's
    /// forget made another thread's subscript read stop the process in 2 of 3 runs.)
    @Test(.timeLimit(.minutes(1))) func readsOnOneThreadSurviveInstancesComingAndGoingOnOthers() throws {
        let store = InMemoryKeyringStore()
        let options = SecureDictionary.Options(store: store, failureHandler: { _ in })
        let app = "test.read-rule.threads.\(UUID())"
        let first = try SecureDictionary(name: "rule", applicationID: app, options: options)
        try first.setValue("v", forKey: "k")
        let wrong = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        let group = DispatchGroup()
        for index in 0..<4 {
            DispatchQueue.global().async(group: group) {
                while !stop.load(ordering: .relaxed) {
                    if index % 2 == 0 {
                        if index == 0 { store.failNextCalls(with: .locked, count: 1) }
                        // Opened and released at once: the last instance may go, or a load fail.
                        _ = try? SecureDictionary(name: "rule", applicationID: app, options: options)
                    } else {
                        for (read, seen) in Self.nonThrowingReads(first) where seen != ["k": "v"] {
                            wrong.withLock { $0.append("\(read): \(seen)") }
                        }
                    }
                }
            }
        }
        Thread.sleep(forTimeInterval: 2)
        stop.store(true, ordering: .relaxed)
        group.wait()
        #expect(wrong.withLock { $0 }.isEmpty, "\(wrong.withLock { $0.prefix(5) })")
    }

    /// A delete on one thread while others read: each read sees the dictionary before or after
    /// (empty), never a state in between. (The delete once dropped the cache and loaded it
    /// empty in two steps, and a read in between stopped the program.)
    @Test(.timeLimit(.minutes(1))) func readsSurviveDeletesOnOtherThreads() throws {
        let store = InMemoryKeyringStore()
        let options = SecureDictionary.Options(store: store, failureHandler: { _ in })
        let settings = try SecureDictionary(name: "rule", applicationID: "test.read-rule.delete.\(UUID())", options: options)
        try settings.setValue("v", forKey: "k")
        let wrong = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            while !stop.load(ordering: .relaxed) {
                _ = try? settings.delete()
                try? settings.setValue("v", forKey: "k")
            }
        }
        for _ in 0..<2 {
            DispatchQueue.global().async(group: group) {
                while !stop.load(ordering: .relaxed) {
                    for (read, seen) in Self.nonThrowingReads(settings) where seen != ["k": "v"] && !seen.isEmpty {
                        wrong.withLock { $0.append("\(read): \(seen)") }
                    }
                }
            }
        }
        Thread.sleep(forTimeInterval: 2)
        stop.store(true, ordering: .relaxed)
        group.wait()
        #expect(wrong.withLock { $0 }.isEmpty, "\(wrong.withLock { $0.prefix(5) })")
    }

    /// The description shows the item and a count, never values, and never stops.
    @Test func descriptionShowsTheCount() throws {
        let (settings, _) = try Self.staleWhileLocked()
        #expect(settings.description.hasSuffix("1 entries)"))
    }
}
