import Dispatch
import Foundation
import Logging
import Synchronization
import Testing

@testable import SecureDictionary

#if canImport(Glibc)
    import Glibc
#endif

extension SecureDictionary.Keys {
    fileprivate static let access = Key<String?>("accessToken")
    fileprivate static let refresh = Key<String?>("refreshToken")
    fileprivate static let expires = Key<Date>("expiresAt", default: .distantPast)
}

/// In one process: `value(forKey:lockWait:refreshingIf:refresh:)` refreshes once,
/// whoever asks, holding the item's locks from its check across the refresh to its write.
/// (Across processes, on the real keyrings and the file store: `TokenRefresh`.)
@Suite struct TokenRefreshTests {
    let store = RecordingCoordinatedStore()
    let appID = "test.refresh.\(UUID().uuidString)"

    /// A dictionary holding an expired token pair (`a0`, `r0`).
    func expired(_ store: (any KeyringStore)? = nil) throws -> SecureDictionary {
        let tokens = try SecureDictionary(name: "oauth", applicationID: appID, options: .init(store: store ?? self.store))
        try tokens.update { entries in
            entries[.access] = "a0"
            entries[.refresh] = "r0"
            entries[.expires] = Date(timeIntervalSince1970: 0)
        }
        return tokens
    }

    func stored(_ tokens: SecureDictionary, in store: InMemoryKeyringStore? = nil) throws -> [String: PropertyListValue]? {
        try (store ?? self.store.inner).storedBytes(of: tokens.item).map { try BinaryPropertyList.decode($0, limits: .default) }
    }

    static func isStale(_ entries: SecureDictionary.Entries) -> Bool {
        entries[.access] == nil || entries[.expires] <= Date()
    }

    /// What a token server hands out for refresh token `old`: the next pair, an hour long.
    static func rotate(_ entries: inout SecureDictionary.Entries) {
        let next = Int(entries[.refresh].map { $0.dropFirst() } ?? "0").map { $0 + 1 } ?? 1
        entries[.access] = "a\(next)"
        entries[.refresh] = "r\(next)"
        entries[.expires] = Date().addingTimeInterval(3600)
    }

    // MARK: One caller

    @Test func aStaleTokenIsRefreshedAndEveryEntryTheRefreshSetsIsWrittenInOneWrite() throws {
        let tokens = try expired()
        let writesBefore = store.events.withLock { $0.filter { $0 == "store" }.count }
        let token = try tokens.value(forKey: "accessToken", refreshingIf: Self.isStale) { Self.rotate(&$0) }
        #expect(token == "a1")
        let stored = try #require(try stored(tokens))
        #expect(stored["accessToken"] == "a1")
        #expect(stored["refreshToken"] == "r1")
        #expect(stored["expiresAt"]?.dateValue.map { $0 > Date() } == true)
        #expect(store.events.withLock { $0.filter { $0 == "store" }.count } == writesBefore + 1)
        #expect(tokens[.refresh] == "r1")  // the cache follows the store
    }

    @Test func theWriterLockIsHeldFromTheCheckAcrossTheRefreshToTheWrite() throws {
        let tokens = try expired()
        store.onRelease { [store] in store.events.withLock { $0.append("release") } }
        _ = try tokens.value(forKey: "accessToken", refreshingIf: Self.isStale) { entries in
            store.events.withLock { $0.append("refresh") }
            Self.rotate(&entries)
        }
        // The check, the caller's refresh, the check again and the write, all under one lock.
        #expect(store.events.withLock { $0 } == ["acquire", "load", "refresh", "load", "store", "release"])
    }

    @Test func freshEntriesAreReturnedWithoutARefreshOrAKeyringCall() throws {
        let tokens = try expired()
        _ = try tokens.value(forKey: "accessToken", refreshingIf: Self.isStale) { Self.rotate(&$0) }
        store.onRelease {}
        let token = try tokens.value(forKey: "accessToken", refreshingIf: Self.isStale) { _ in
            Issue.record("refreshed a fresh token")
        }
        #expect(token == "a1")
        #expect(store.events.withLock { $0 }.isEmpty)
    }

    /// The re-read under the lock: another process refreshed after this one last read, so
    /// the memory says stale and the keyring says fresh; the keyring wins and nothing is spent.
    @Test func aTokenAnotherProcessRefreshedIsTakenWithoutRefreshingAgain() throws {
        let tokens = try expired()
        let theirs: [String: PropertyListValue] = [
            "accessToken": "theirs", "refreshToken": "r-theirs", "expiresAt": .date(Date().addingTimeInterval(3600)),
        ]
        store.inner.plant(try BinaryPropertyList.encode(theirs, limits: .default), for: tokens.item)
        let token = try tokens.value(forKey: "accessToken", refreshingIf: Self.isStale) { _ in
            Issue.record("refreshed a token another process had refreshed")
        }
        #expect(token == "theirs")
        #expect(try stored(tokens) == theirs)
    }

    struct ServerSaidNo: Error {}

    @Test func aRefreshThatThrowsWritesNothingAndFreesTheLock() throws {
        let tokens = try expired()
        let before = try stored(tokens)
        #expect(throws: ServerSaidNo.self) {
            try tokens.value(forKey: "accessToken", refreshingIf: Self.isStale) { entries in
                entries[.access] = "half"
                throw ServerSaidNo()
            }
        }
        #expect(try stored(tokens) == before)
        #expect(tokens[.access] == "a0")
        // Free in this process: a write with a deadline too short to wait for anything.
        let quick = try SecureDictionary(
            name: "oauth", applicationID: appID, options: .init(timeout: .milliseconds(200), store: store))
        try quick.setValue("after", forKey: "other")
        #expect(try tokens.value(forKey: "accessToken", refreshingIf: Self.isStale) { Self.rotate(&$0) } == "a1")
    }

    /// "Checked before the write": a tool that does not take the lock (secret-tool, python)
    /// writes while the refresh runs; the refresh's write is applied onto what it wrote.
    @Test func anOutsideWriteDuringTheRefreshIsKept() throws {
        let tokens = try expired()
        let inner = store.inner
        let item = tokens.item
        let token = try tokens.value(forKey: "accessToken", refreshingIf: Self.isStale) { entries in
            var outside = (try? BinaryPropertyList.decode(inner.storedBytes(of: item) ?? [], limits: .default)) ?? [:]
            outside["theme"] = "dark"
            inner.plant(try? BinaryPropertyList.encode(outside, limits: .default), for: item)
            Self.rotate(&entries)
        }
        #expect(token == "a1")
        let stored = try #require(try stored(tokens))
        #expect(stored["theme"] == "dark")
        #expect(stored["refreshToken"] == "r1")
    }

    @Test func theAsyncFormRefreshesWithAnAwaitingRefresh() async throws {
        let tokens = try expired()
        let token = try await tokens.async.value(forKey: "accessToken", refreshingIf: Self.isStale) { entries in
            await Task.yield()  // a network call's suspension
            Self.rotate(&entries)
        }
        #expect(token == "a1")
        #expect(try stored(tokens)?["refreshToken"] == "r1")
    }
}

// MARK: Many callers in one process

extension TokenRefreshTests {
    /// Counts the callers' looks at the entries, and holds the refresh until there were as
    /// many looks as callers: with the holder's two (in memory, under the lock), all other
    /// callers but one found the memory stale and are on their way to the lock while the
    /// refresh runs. (Callers that refreshed without the lock would each hold their refresh
    /// until all of them looked: so all of them refresh.)
    final class Crowd: Sendable {
        let callers: Int
        let looks = Mutex(0)
        let refreshes = Mutex(0)
        private let everyoneLooked = DispatchSemaphore(value: 0)
        private let everyoneLookedAsync = TokenRefreshTests.Signal()

        init(callers: Int) { self.callers = callers }

        func isStale(_ entries: SecureDictionary.Entries) -> Bool {
            let count = looks.withLock {
                $0 += 1
                return $0
            }
            if count == callers {
                everyoneLooked.signal()
                everyoneLookedAsync.fire()
            }
            return TokenRefreshTests.isStale(entries)
        }

        /// The refresh of a thread: waits (at most 10 s) for the others to look, then rotates.
        func refresh(_ entries: inout SecureDictionary.Entries) {
            refreshes.withLock { $0 += 1 }
            _ = everyoneLooked.wait(timeout: .now() + 10)
            TokenRefreshTests.rotate(&entries)
        }

        /// The refresh of a task: suspends until the others looked, then rotates.
        func refresh(_ entries: inout SecureDictionary.Entries) async {
            refreshes.withLock { $0 += 1 }
            await everyoneLookedAsync.arrival()
            TokenRefreshTests.rotate(&entries)
        }
    }

    @Test(.timeLimit(.minutes(1))) func threadsOfOneProcessRefreshOnceAndAllGetTheNewToken() async throws {
        let tokens = try expired()
        let crowd = Crowd(callers: 8)
        let tokensSeen = Mutex<[String?]>([])
        let threads = DispatchGroup()
        for _ in 0..<crowd.callers {
            threads.enter()
            Thread {
                let token = try? tokens.value(forKey: "accessToken", refreshingIf: crowd.isStale) { crowd.refresh(&$0) }
                tokensSeen.withLock { $0.append(token?.stringValue) }
                threads.leave()
            }.start()
        }
        await withCheckedContinuation { done in threads.notify(queue: .global()) { done.resume() } }
        #expect(crowd.refreshes.withLock { $0 } == 1)
        #expect(tokensSeen.withLock { $0 } == Array(repeating: "a1", count: crowd.callers))
    }

    @Test(.timeLimit(.minutes(1))) func tasksOfOneProcessRefreshOnceAndAllGetTheNewToken() async throws {
        let tokens = try expired()
        let crowd = Crowd(callers: 16)
        let seen = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<crowd.callers {
                group.addTask {
                    try await tokens.async.value(forKey: "accessToken", refreshingIf: crowd.isStale) { entries in
                        await crowd.refresh(&entries)
                    }?.stringValue
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(crowd.refreshes.withLock { $0 } == 1)
        #expect(seen == Array(repeating: "a1", count: crowd.callers))
    }
}

// MARK: Waiting

extension TokenRefreshTests {
    /// A refresh that goes on until the test lets it finish.
    final class HeldRefresh: Sendable {
        let started = Signal()
        let finish = Signal()

        func refresh(_ entries: inout SecureDictionary.Entries) async {
            started.fire()
            await finish.arrival()
            TokenRefreshTests.rotate(&entries)
        }

        /// Starts a refresh of `tokens`' stale access token that goes on until `finish` fires;
        /// returns once it started, with the task that returns the refreshed token.
        func start(on tokens: SecureDictionary) async -> Task<SecureDictionary.Value?, any Error> {
            let refreshing = Task {
                try await tokens.async.value(
                    forKey: "accessToken", refreshingIf: TokenRefreshTests.isStale, refresh: self.refresh)
            }
            await started.arrival()
            return refreshing
        }
    }

    /// An event that tasks await without holding a thread (a semaphore's `arrival()` holds one
    /// of the global queue's, and tests running side by side then wait for the queue's next thread).
    final class Signal: Sendable {
        private let state = Mutex<(fired: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

        func fire() {
            let waiting = state.withLock { state in
                state.fired = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }

        func arrival() async {
            await withCheckedContinuation { continuation in
                let fired = state.withLock { state in
                    if !state.fired { state.waiting.append(continuation) }
                    return state.fired
                }
                if fired { continuation.resume() }
            }
        }
    }

    /// Returns once `count` callers wait in `tokens`' queue; throws when they do not within 10 seconds.
    static func queued(_ count: Int, at tokens: SecureDictionary) async throws {
        let gate = try tokens.state.queue(until: Deadline(after: .seconds(1)))
        let deadline = ContinuousClock.now + .seconds(10)
        while gate.waiting < count {
            try #require(ContinuousClock.now < deadline, "\(gate.waiting) of \(count) callers wait for the refresh")
            await Task.yield()
        }
    }

    static func isLockHeldByThisProcess(_ error: any Error) -> Bool {
        guard case SecureDictionaryError.lockHeld(let pid, _) = error else { return false }
        return pid == Int(getpid())
    }

    @Test(.timeLimit(.minutes(1))) func aWaiterGivesUpAfterItsLockWaitNamingTheHolder() async throws {
        let tokens = try expired()
        let holder = HeldRefresh()
        defer { holder.finish.fire() }  // also when the test stops early
        let refreshing = await holder.start(on: tokens)
        await #expect(
            performing: {
                try await tokens.async.value(forKey: "accessToken", lockWait: .milliseconds(100), refreshingIf: Self.isStale) {
                    _ in
                    Issue.record("a waiter refreshed")
                }
            }, throws: Self.isLockHeldByThisProcess)
        // The sync form waits and gives up the same way.
        let syncOutcome = await withCheckedContinuation { (done: CheckedContinuation<(any Error)?, Never>) in
            Thread {
                do {
                    _ = try tokens.value(forKey: "accessToken", lockWait: .milliseconds(100), refreshingIf: Self.isStale) { _ in }
                    done.resume(returning: nil)
                } catch {
                    done.resume(returning: error)
                }
            }.start()
        }
        #expect(syncOutcome.map(Self.isLockHeldByThisProcess) == true, "\(String(describing: syncOutcome))")
        holder.finish.fire()
        #expect(try await refreshing.value == "a1")
        #expect((try tokens.state.queue(until: Deadline(after: .seconds(1))).waiting) == 0)
    }

    /// A wait for a refresh of this process says so, and names the fix: not "another process".
    @Test func aWaitForThisProcesssOwnRefreshSaysSoAndNamesTheFix() {
        let text = LockQueue.heldHere.description
        #expect(text.hasPrefix("This process ("), "\(text)")
        #expect(text.contains("timeout shorter than lockWait"), "\(text)")
    }

    @Test(.timeLimit(.minutes(1))) func aCancelledWaiterLeavesTheQueueAndTheNextOneGetsTheFreshToken() async throws {
        let tokens = try expired()
        let holder = HeldRefresh()
        defer { holder.finish.fire() }  // also when the test stops early
        let refreshing = await holder.start(on: tokens)
        let cancelled = Task { try await tokens.async.value(forKey: "accessToken", refreshingIf: Self.isStale) { _ in } }
        let next = Task {
            try await tokens.async.value(forKey: "accessToken", refreshingIf: Self.isStale) { _ in
                Issue.record("the waiter after the holder refreshed")
            }
        }
        try await Self.queued(2, at: tokens)
        cancelled.cancel()
        await #expect(throws: SecureDictionaryError.cancelled) { try await cancelled.value }
        #expect((try tokens.state.queue(until: Deadline(after: .seconds(1))).waiting) == 1)
        holder.finish.fire()
        #expect(try await refreshing.value == "a1")
        #expect(try await next.value == "a1")
    }

    /// Waiters suspend: with more of them than the cooperative pool has threads (and more
    /// than the private queue would lend), other async work still runs while they wait.
    @Test(.timeLimit(.minutes(1))) func waitersSuspendInsteadOfHoldingThreads() async throws {
        let tokens = try expired()
        let holder = HeldRefresh()
        defer { holder.finish.fire() }  // also when the test stops early
        let refreshing = await holder.start(on: tokens)
        let waiters = (0..<64).map { _ in
            Task { try await tokens.async.value(forKey: "accessToken", refreshingIf: Self.isStale) { _ in } }
        }
        try await Self.queued(waiters.count, at: tokens)
        // Async calls, the library's own included, still run.
        let other = try SecureDictionary(name: "other", applicationID: appID, options: .init(store: InMemoryKeyringStore()))
        try await other.async.setValue("v", forKey: "k")
        #expect(try await other.async.value(forKey: "k") == "v")
        holder.finish.fire()
        #expect(try await refreshing.value == "a1")
        for waiter in waiters { #expect(try await waiter.value == "a1") }
    }
}

// MARK: Cancelled while the locks are taken

/// A store whose writer lock, once gated, is taken only when the test opens the gate.
final class GatedLockStore: ForwardingStore, CoordinatedStore, Sendable {
    let inner = InMemoryKeyringStore()
    /// The queue in front of its lock (one lock for every item of the store).
    let queue = LockQueue()
    let gated = Atomic<Bool>(false)
    let acquiring = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    let counts = Mutex((acquired: 0, released: 0))

    package func writerLock(for item: KeyringItem, logger: Logger) -> any ItemWriterLock { Lock(store: self) }
    package func watchChanges(_ onChange: @escaping @Sendable (KeyringChange) -> Void) -> (any ChangeWatch)? { nil }
    package var place: String? { nil }

    struct Lock: ItemWriterLock {
        let store: GatedLockStore

        func queue(until deadline: Deadline) -> LockQueue { store.queue }

        func acquire(waitingUntil deadline: Deadline, answeringBy _: Deadline) throws(SecureDictionaryError) -> Bool {
            if store.gated.load(ordering: .relaxed) {
                store.acquiring.signal()
                store.gate.wait()
            }
            store.counts.withLock { $0.acquired += 1 }
            return true
        }

        func release() { store.counts.withLock { $0.released += 1 } }
    }
}

extension TokenRefreshTests {
    /// The async caller's wait for the locks ends at its cancellation, while the private queue
    /// still takes them; the locks, taken for nobody, are given back.
    @Test(.timeLimit(.minutes(1))) func aCallerCancelledWhileTakingTheLocksLeavesThemFree() async throws {
        let store = GatedLockStore()
        let tokens = try expired(store)
        store.gated.store(true, ordering: .relaxed)
        let caller = Task {
            try await tokens.async.value(forKey: "accessToken", refreshingIf: Self.isStale) { _ in
                Issue.record("a cancelled caller refreshed")
            }
        }
        await store.acquiring.arrival()
        caller.cancel()
        await #expect(throws: SecureDictionaryError.cancelled) { try await caller.value }
        store.gated.store(false, ordering: .relaxed)
        store.gate.signal()
        // Taken now, for nobody: a write gets both locks within its deadline.
        let writer = try SecureDictionary(name: "oauth", applicationID: appID, options: .init(timeout: .seconds(3), store: store))
        try await writer.async.setValue("after", forKey: "other")
        let counts = store.counts.withLock { $0 }
        #expect(counts.acquired == counts.released)
        #expect(try stored(tokens, in: store.inner)?["refreshToken"] == "r0")
    }
}
