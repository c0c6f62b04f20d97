import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// `Options.unlock = .prompt(timeout:)` shows the keyring's real unlock dialog
    /// (gcr-prompter on a virtual X server, `scripts/with-private-keyring --prompter`), and a
    /// test answers it as a user would, with keys (`scripts/prompter`). In CI the prompter
    /// is required (`scripts/test` starts it); elsewhere the suite runs when it is there.
    @Suite(
        .enabled(
            if: PrivateKeyring.provider == "gnome-keyring" && (PrivateKeyring.hasPrompter || PrivateKeyring.required),
            "needs gnome-keyring with the GNOME prompter: scripts/with-private-keyring --prompter"))
    struct UnlockPrompt {
        private func prompter(_ command: String, _ arguments: [String] = []) throws {
            let output = try PrivateKeyring.prompter(command, arguments)
            #expect(output.succeeded, "prompter \(command): \(output)")
        }

        /// Opens `test` on a new store with the dialog allowed, in the background.
        private func openInBackground(_ test: TestItem, waiting timeout: Duration) -> Task<SecureDictionary, any Error> {
            let options = SecureDictionary.Options(unlock: .prompt(timeout: timeout), store: SecretServiceStore())
            let (name, appID) = (test.name, test.appID)
            return Task.detached {
                try await SecureDictionary.Async.open(name: name, applicationID: appID, options: options)
            }
        }

        @Test func theUserUnlocksInTheDialogAndTheCallGoesOn() async throws {
            let test = TestItem("prompt-accept")
            try test.open().setValue("kept", forKey: "k")
            try KeyringHarness.daemon("lock")
            defer { try? KeyringHarness.daemon("unlock") }

            let opening = openInBackground(test, waiting: .seconds(30))
            try prompter("wait-shown")
            try prompter(
                "screenshot", [FileManager.default.temporaryDirectory.appendingPathComponent("sd-unlock-dialog.png").path])
            try prompter("type-password")
            let dictionary = try await opening.value
            #expect(dictionary["k"] == "kept")
            try prompter("wait-gone")
            #expect(try test.openFresh()["k"] == "kept")  // unlocked for everyone now
        }

        @Test func cancelInTheDialogIsUnlockDismissed() async throws {
            let test = TestItem("prompt-cancel")
            try test.open().setValue("kept", forKey: "k")
            try KeyringHarness.daemon("lock")
            defer { try? KeyringHarness.daemon("unlock") }

            let opening = openInBackground(test, waiting: .seconds(30))
            try prompter("wait-shown")
            try prompter("cancel")
            await #expect(throws: SecureDictionaryError.unlockDismissed) { try await opening.value }
            try prompter("wait-gone")
            #expect(throws: SecureDictionaryError.locked) { try test.openFresh() }
        }

        @Test func aWrongPasswordKeepsTheDialogUntilTheRightOne() async throws {
            let test = TestItem("prompt-wrong")
            try test.open().setValue("kept", forKey: "k")
            try KeyringHarness.daemon("lock")
            defer { try? KeyringHarness.daemon("unlock") }

            let opening = openInBackground(test, waiting: .seconds(30))
            try prompter("wait-shown")
            try prompter("type", ["not the password"])
            try prompter("visible")
            try prompter("type-password")
            #expect(try await opening.value["k"] == "kept")
        }

        /// gnome-keyring-daemon 42.1 aborts when a shown unlock prompt is dismissed, so the
        /// dialog is left to its user: the call gives up with `locked`, the dialog stays.
        @Test func nobodyAnsweringIsLockedAndGnomeKeyringKeepsItsDialog() async throws {
            let test = TestItem("prompt-timeout")
            try test.open().setValue("kept", forKey: "k")
            try KeyringHarness.daemon("lock")
            defer { try? KeyringHarness.daemon("unlock") }

            let start = ContinuousClock.now
            let opening = openInBackground(test, waiting: .seconds(2))
            try prompter("wait-shown")
            await #expect(throws: SecureDictionaryError.locked) { try await opening.value }
            #expect(ContinuousClock.now - start < .seconds(6))  // not a perf goal: it gave up at its timeout
            try prompter("visible")  // still up: never dismissed on gnome-keyring
            try KeyringHarness.daemon("pid")  // and the daemon is alive
            try prompter("cancel")
            try prompter("wait-gone")
        }

        /// Cancelling the task ends the wait at once; the dialog is not taken back (it
        /// cannot be on gnome-keyring), so the user can still unlock, for everyone.
        @Test func cancellingTheTaskEndsTheWaitWithCancelled() async throws {
            let test = TestItem("prompt-task-cancel")
            try test.open().setValue("kept", forKey: "k")
            try KeyringHarness.daemon("lock")
            defer { try? KeyringHarness.daemon("unlock") }

            let opening = openInBackground(test, waiting: .seconds(30))
            try prompter("wait-shown")
            let cancelled = ContinuousClock.now
            opening.cancel()
            await #expect(throws: SecureDictionaryError.cancelled) { try await opening.value }
            #expect(ContinuousClock.now - cancelled < .seconds(5))  // not a perf goal: the user is waited for 30 s
            try prompter("visible")
            try prompter("type-password")
            try prompter("wait-gone")
            #expect(try test.openFresh()["k"] == "kept")
        }

        @Test func withoutThePolicyNoDialogAppears() throws {
            let test = TestItem("prompt-never")
            try test.open().setValue("kept", forKey: "k")
            try KeyringHarness.daemon("lock")
            defer { try? KeyringHarness.daemon("unlock") }
            #expect(throws: SecureDictionaryError.locked) { try test.openFresh() }
            let shown = try PrivateKeyring.prompter("wait-shown", ["1"])
            #expect(!shown.succeeded, "a dialog appeared: \(shown)")
        }
    }
}
