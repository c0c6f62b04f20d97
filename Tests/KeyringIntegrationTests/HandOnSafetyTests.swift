import CSecretShim
import Dispatch
import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// BusNameWriterLock rules 5 and 6, where they can go wrong: a write that gave the writer
    /// lock on with its CreateItem is never sent again, and a call that outlived its deadline
    /// never gives away the lock of the writer after it. Only gnome-keyring hands the lock on.
    @Suite(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "only gnome-keyring hands the lock on"))
    struct HandOnSafety {
        /// The collection is locked between the check and the write, so the write (lock handed
        /// on) is answered "locked". The collection needs no password, so SecureDictionary can
        /// unlock it without a prompt, as it does before it tries again; but the next writer may
        /// have written meanwhile, so this write must not be sent a second time.
        @Test(.timeLimit(.minutes(1))) func aWriteWhoseLockWentOnIsNotSentAgainAfterAnUnlock() throws {
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

            #expect(throws: SecureDictionaryError.locked) {
                try dictionary.update { entries in
                    _ = try? fixture(["lock", "--collection", scratch])
                    entries["b"] = "second"
                }
            }
            // SecureDictionary unlocked it without a prompt: the branch that used to send again ran.
            #expect(try fixture(["locked", "--collection", scratch]) == "unlocked")
            #expect(dictionary.snapshot == ["a": "first"])
            #expect(try test.openFresh().snapshot == ["a": "first"], "the write was sent again after the unlock")
        }

        /// A write waits on the keyring thread behind another call until after its deadline;
        /// its caller gives up and releases the lock, and the next writer of this process takes
        /// it. When the stale write then runs, it must leave that writer's lock alone (the
        /// process's one bus connection owns the name for both).
        @Test(.timeLimit(.minutes(1))) func aCallThatOutlivedItsDeadlineLeavesTheNextWritersLockAlone() throws {
            let test = TestItem("stale")
            let client = LibSecretClient()
            let store = SecretServiceStore(client: client)
            let dictionary = try test.open(.init(timeout: .milliseconds(800), store: store))
            // The same item through the same store (one state, one lock), with time to spare.
            let nextWriter = try test.open(.init(timeout: .seconds(10), store: store))
            try dictionary.setValue("first", forKey: "a")  // proves the session: later writes hand the lock on
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
                    ownerWhileHeld = sd_bus_name_owner_pid(busName)
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
