import Dispatch
import Foundation
import Synchronization
import Testing

@testable import SecureDictionary
@testable import SecureDictionaryFileStore

#if canImport(Glibc)
    import Glibc
#endif

/// This process's one queue per lock name (`LockQueue`): every caller that takes one lock,
/// whichever instance, store object, thread or task it comes from, waits in one queue with
/// one rule for its deadline and its error.
@Suite struct LockQueueTests {
    let base: String

    init() throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("sd-queue-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        chmod(base, 0o700)
    }

    /// A file store on `base`'s folder: a new store object each call, so a new cache and a new
    /// item state for the same item file and the same lock.
    private func tokens(_ timeout: Duration = .seconds(3)) throws -> SecureDictionary {
        let secret = SecretBytes(copying: Array(repeating: UInt8(0x5a), count: 32))
        let store = EncryptedFileStore(folderPath: "\(base)/store") { _ throws(SecureDictionaryError) in secret }
        return try SecureDictionary(
            name: "oauth", applicationID: "org.example.App", options: .init(timeout: timeout, store: store))
    }

    /// Two store objects on one folder share the item's lock file, so a refresh through one
    /// and a wait through the other meet in one queue, and the waiter's error names this
    /// process. (Before, each item state had a refresh gate and a lock of its own in front
    /// of a per-name lock: the waiter passed its own two, then timed out in the third, and
    /// said `timedOut`, as if the file system had not answered.)
    @Test(.timeLimit(.minutes(1))) func aRefreshThroughAnotherStoreObjectOfTheSameFileIsNamedAtTheDeadline() async throws {
        let holding = try tokens()
        try holding.update { entries in
            entries["accessToken"] = "a0"
            entries["expiresAt"] = .date(Date(timeIntervalSince1970: 0))
        }
        let other = try tokens(.milliseconds(200))  // loaded before the refresh, which its load would wait for
        let holder = TokenRefreshTests.HeldRefresh()
        defer { holder.finish.fire() }  // also when the test stops early
        let refreshing = await holder.start(on: holding)
        await #expect(
            performing: {
                try await other.async.value(forKey: "accessToken", lockWait: .milliseconds(100), refreshingIf: { _ in true }) {
                    _ in
                    Issue.record("a waiter refreshed")
                }
            }, throws: TokenRefreshTests.isLockHeldByThisProcess)
        do {
            try other.setValue("w", forKey: "written")  // a plain write waits in the same queue
            Issue.record("a write went on while the refresh held the lock")
        } catch {
            #expect(TokenRefreshTests.isLockHeldByThisProcess(error), "\(error)")
        }
        holder.finish.fire()
        #expect(try await refreshing.value == "a1")
    }

    /// First come, first served, blocked threads and suspended tasks alike.
    @Test(.timeLimit(.minutes(1))) func threadsAndTasksAreServedInArrivalOrder() async throws {
        let queue = LockQueue()
        #expect(queue.enter(until: Deadline(after: .zero)))
        let served = Served()
        let done = DispatchGroup()
        for caller in 0..<6 {
            let arrived = queue.waiting
            if caller % 2 == 0 {
                done.enter()
                Thread {
                    if queue.enter(until: Deadline(after: .seconds(30))) {
                        served.order.withLock { $0.append(caller) }
                        queue.leave()
                    }
                    done.leave()
                }.start()
            } else {
                done.enter()
                Task {
                    if await queue.enter(until: Deadline(after: .seconds(30))) == .entered {
                        served.order.withLock { $0.append(caller) }
                        queue.leave()
                    }
                    done.leave()
                }
            }
            while queue.waiting == arrived { await Task.yield() }  // queued before the next one comes
        }
        queue.leave()
        await withCheckedContinuation { finished in done.notify(queue: .global()) { finished.resume() } }
        #expect(served.order.withLock { $0 } == Array(0..<6))
    }

    /// The callers served, in order.
    final class Served: Sendable {
        let order = Mutex<[Int]>([])
    }

    /// A deadline already passed (`lockWait: .zero`) takes a free queue, never waits for a
    /// held one, and leaves nobody queued.
    @Test func aPassedDeadlineTriesOnce() async {
        let queue = LockQueue()
        #expect(queue.enter(until: Deadline(after: .zero)))
        #expect(!queue.enter(until: Deadline(after: .zero)))
        #expect(await queue.enter(until: Deadline(after: .zero)) == .timedOut)
        #expect(queue.waiting == 0)
        queue.leave()
        #expect(queue.enter(until: Deadline(after: .zero)))
        queue.leave()
    }
}
