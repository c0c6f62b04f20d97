import Dispatch
import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// The writer lock is held from the check until the write is answered, on every provider,
    /// and only by the call that took it.
    @Suite struct LockSafety {
        /// The collection is locked between the check and the write, so the write is answered
        /// "locked". The collection needs no password, so SecureDictionary unlocks it without a
        /// prompt and sends the write again: still under the writer lock it took for the check,
        /// so no other writer can have written in between. (While a write gave the lock on as
        /// it was sent, this had to fail with `locked` instead.) gnome-keyring only: the others
        /// cannot make a password-less collection.
        @Test(
            .timeLimit(.minutes(1)),
            .enabled(if: PrivateKeyring.provider == "gnome-keyring", "needs a password-less collection"))
        func aWriteAnsweredLockedIsSentAgainUnderTheSameLockAfterAnUnlockWithoutAPrompt() throws {
            let login = try fixture(["alias", "default"])
            let scratch = try fixture(["create-collection", "--label", "hand-on-\(UUID().uuidString)"])
            _ = try fixture(["set-alias", "default", scratch])
            defer {
                _ = try? fixture(["set-alias", "default", login])
                _ = try? fixture(["delete-collection", scratch])
            }
            let test = TestItem("resend")
            let dictionary = try test.open(.init(store: SecretServiceStore()))
            try dictionary.setValue("first", forKey: "a")  // creates the item, read back: the session is proven

            try dictionary.update { entries in
                _ = try? fixture(["lock", "--collection", scratch])
                entries["b"] = "second"
            }
            // SecureDictionary unlocked it without a prompt, and wrote.
            #expect(try fixture(["locked", "--collection", scratch]) == "unlocked")
            #expect(dictionary.snapshot == ["a": "first", "b": "second"])
            #expect(try test.openFresh().snapshot == ["a": "first", "b": "second"])
        }

        /// A write waits on the keyring thread behind another call until after its deadline;
        /// its caller gives up and releases the lock, and the next writer of this process takes
        /// it. When the stale write then runs, it must write nothing (its call was cancelled)
        /// and leave that writer's lock alone (the process's one bus connection owns the name
        /// for both).
        @Test(.timeLimit(.minutes(1))) func aCallThatOutlivedItsDeadlineLeavesTheNextWritersLockAlone() throws {
            let test = TestItem("stale")
            let client = LibSecretClient()
            let store = SecretServiceStore(client: client)
            let dictionary = try test.open(.init(timeout: .milliseconds(800), store: store))
            // The same item through the same store (one state, one lock), with time to spare.
            let nextWriter = try test.open(.init(timeout: .seconds(10), store: store))
            try dictionary.setValue("first", forKey: "a")  // proves the session: no read-back later
            let busName = BusNameWriterLock.busName(for: try test.item)

            let laneBusy = DispatchSemaphore(value: 0)
            let laneFree = DispatchSemaphore(value: 0)
            let staleWriteRan = DispatchSemaphore(value: 0)
            #expect(throws: SecureDictionaryError.timedOut) {
                try dictionary.update { entries in
                    // Checked already; the write will queue behind this call and time out.
                    Thread {
                        _ = client.lane.run(timeout: .seconds(20), interrupt: {}) { _ in
                            laneBusy.signal()
                            laneFree.wait()
                        }
                    }.start()
                    laneBusy.wait()
                    // Queued behind the write (well before its deadline renews the lane): runs
                    // once the stale write has.
                    Thread {
                        usleep(200_000)
                        _ = client.lane.run(timeout: .seconds(20), interrupt: {}) { _ in }
                        staleWriteRan.signal()
                    }.start()
                    entries["b"] = "second"
                }
            }
            var ownerWhileHeld = 0
            do {
                try nextWriter.update { entries in
                    laneFree.signal()  // the stale write runs now, while this writer holds the lock
                    #expect(staleWriteRan.wait(timeout: .now() + 5) == .success)
                    ownerWhileHeld = SessionBusName.ownerPID(of: busName, until: Deadline(after: .seconds(1))) ?? -1
                    entries["c"] = "third"
                }
            } catch {
                // As the stale call took the turn's state, the writer's own write may fail too.
                Issue.record("the next writer failed after a stale call ran during its turn: \(error)")
            }
            #expect(ownerWhileHeld == Int(getpid()), "the writer lost its lock to a stale call")
            #expect(try test.openFresh().snapshot == ["a": "first", "c": "third"])
        }

        private func fixture(_ arguments: [String]) throws -> String {
            let output = try KeyringHarness.fixture(arguments)
            try #require(output.status == 0, "keyring-fixture \(arguments.first ?? ""): \(output.stderr)")
            return output.trimmedText
        }
    }
}
