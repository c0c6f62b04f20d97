import Foundation
import SecureDictionaryAdoption
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// KeePassXC, by its own default, asks its user before a client reads an item
    /// the first time, and hides the item as "locked" until then. That is
    /// `confirmationRequired` at once, with no dialog, never `locked` (which would send the
    /// user to unlock a database that is open). The private KeePassXC runs with it off; these
    /// tests restart it with it on.
    ///
    /// With the opt-in (`unlock: .prompt(timeout:)`), the call asks KeePassXC to show
    /// its access dialog (`Service.Unlock` of the items, then `Prompt.Prompt`) and goes on once
    /// the user allowed; here KeePassXC runs on the session's virtual X server and
    /// `scripts/prompter` answers its dialog with keys, as a user would.
    @Suite(.enabled(if: PrivateKeyring.provider == "keepassxc", "only KeePassXC asks for confirmations headless"))
    struct Confirmations {
        private func restartKeePassXC(confirmingAccess: Bool, onDisplay: Bool = false) throws {
            for output in try PrivateKeyring.restartKeePassXC(confirmingAccess: confirmingAccess, onDisplay: onDisplay) {
                #expect(output.status == 0, "keyring-daemon: \(output.stderr)")
            }
        }

        private func prompter(_ command: String, _ arguments: [String] = []) throws {
            let output = try PrivateKeyring.prompter(command, arguments)
            #expect(output.succeeded, "prompter \(command): \(output)")
        }

        /// Restarts KeePassXC confirming access, on the display, with `test`'s dictionary made by
        /// another process (whose items KeePassXC does not let this process read): the
        /// dictionary holds "k" = "kept".
        private func keePassXCAskingAboutAnItemOfAnotherProcess(_ test: TestItem) throws {
            try restartKeePassXC(confirmingAccess: true, onDisplay: true)
            let other = try KeyringHarness.run(KeyringHarness.writer, ["set", test.appID, test.name, "k", "kept"])
            #expect(other.status == 0, "\(other)")
        }

        /// Whether `test`'s dictionary still holds "k" = "kept", read after
        /// ``restartSavingWithoutConfirmations()``.
        private func stillKept(_ test: TestItem) throws -> Bool {
            try restartSavingWithoutConfirmations()
            return try test.openFresh()["k"] == "kept"
        }

        /// Stops KeePassXC cleanly (so it saves) and starts it without confirmations: no other
        /// process may read an item while they are on, and a restart by kill -9 loses what was
        /// not saved.
        private func restartSavingWithoutConfirmations() throws {
            for command in ["stop", "start"] {
                let output = try PrivateKeyring.daemon(command, environment: ["SD_KEEPASSXC_CONFIRM_ACCESS": "0"])
                #expect(output.status == 0, "keyring-daemon \(command): \(output.stderr)")
            }
        }

        private static let optedIn = SecureDictionary.Options(unlock: .prompt(timeout: .seconds(30)), store: SecretServiceStore())

        @Test(.enabled(if: PrivateKeyring.hasPrompter || PrivateKeyring.required, "needs a display: --prompter"))
        func withTheOptInTheUserAllowsInKeePassXCsDialogAndTheCallsGoOnAskingOnce() async throws {
            let test = TestItem("access-allow")
            try keePassXCAskingAboutAnItemOfAnotherProcess(test)
            defer { try? restartKeePassXC(confirmingAccess: false) }
            let (name, appID) = (test.name, test.appID)
            let opening = Task.detached {
                try SecureDictionary(name: name, applicationID: appID, options: Self.optedIn)
            }
            try prompter("wait-shown", ["20"])
            try prompter(
                "screenshot", [FileManager.default.temporaryDirectory.appendingPathComponent("sd-keepassxc-access.png").path])
            try prompter("keepassxc-allow")
            let dictionary = try await opening.value
            #expect(dictionary["k"] == "kept")
            // Allowed for this process (one client: one connection) while KeePassXC runs.
            try dictionary.setValue("changed", forKey: "k")
            try dictionary.reload()
            #expect(try SecureDictionary(name: name, applicationID: appID, options: Self.optedIn)["k"] == "changed")
            let shown = try PrivateKeyring.prompter("wait-shown", ["1"])
            #expect(!shown.succeeded, "a second dialog appeared: \(shown)")
        }

        @Test(.enabled(if: PrivateKeyring.hasPrompter || PrivateKeyring.required, "needs a display: --prompter"))
        func withTheOptInTheUserDenyingIsConfirmationDeniedAndNothingIsWritten() async throws {
            let test = TestItem("access-deny")
            try keePassXCAskingAboutAnItemOfAnotherProcess(test)
            defer { try? restartKeePassXC(confirmingAccess: false) }
            let (name, appID) = (test.name, test.appID)
            let deleting = Task.detached {
                try SecureDictionary.delete(name: name, applicationID: appID, options: Self.optedIn)
            }
            try prompter("wait-shown", ["20"])
            try prompter("keepassxc-deny")
            await #expect(throws: SecureDictionaryError.confirmationDenied) { try await deleting.value }
            let opening = Task.detached {
                try SecureDictionary(name: name, applicationID: appID, options: Self.optedIn)
            }
            try prompter("wait-shown", ["20"])  // denied, not remembered: asked again
            try prompter("keepassxc-deny")
            await #expect(throws: SecureDictionaryError.confirmationDenied) { try await opening.value }
            #expect(try stillKept(test))
        }

        @Test(.enabled(if: PrivateKeyring.hasPrompter || PrivateKeyring.required, "needs a display: --prompter"))
        func withoutTheOptInKeePassXCShowsNoDialog() throws {
            let test = TestItem("access-never")
            try keePassXCAskingAboutAnItemOfAnotherProcess(test)
            defer { try? restartKeePassXC(confirmingAccess: false) }
            let start = ContinuousClock.now
            #expect(throws: SecureDictionaryError.confirmationRequired) { try test.openFresh() }
            let options = SecureDictionary.Options(store: SecretServiceStore())
            #expect(throws: SecureDictionaryError.confirmationRequired) {
                _ = try SecureDictionary.delete(name: test.name, applicationID: test.appID, options: options)
            }
            #expect(ContinuousClock.now - start < .seconds(5))  // not a perf goal: a dialog is waited for 30 s
            let shown = try PrivateKeyring.prompter("wait-shown", ["1"])
            #expect(!shown.succeeded, "a dialog appeared: \(shown)")
            #expect(try stillKept(test))
        }

        @Test func anItemKeePassXCAsksAccessToIsConfirmationRequiredNotLocked() throws {
            try restartKeePassXC(confirmingAccess: true)
            defer { try? restartKeePassXC(confirmingAccess: false) }
            let test = TestItem("access")
            // Another process creates the item: KeePassXC lets its creator read it, no one else.
            let other = try KeyringHarness.run(KeyringHarness.writer, ["set", test.appID, test.name, "k", "kept"])
            #expect(other.status == 0, "\(other)")
            let probe = try KeyringHarness.run(KeyringHarness.writer, ["probe", test.appID, test.name, "3000"])
            #expect(probe.text.hasPrefix("error confirmationRequired"), "\(probe)")  // a third process

            let start = ContinuousClock.now
            #expect(throws: SecureDictionaryError.confirmationRequired) { try test.openFresh() }
            #expect(ContinuousClock.now - start < .seconds(5))  // not a perf goal: a dialog is waited for 25 s or more
            let options = SecureDictionary.Options(store: SecretServiceStore())
            #expect(throws: SecureDictionaryError.confirmationRequired) {
                _ = try SecureDictionary.delete(name: test.name, applicationID: test.appID, options: options)
            }
            // Listing needs no access: the item is there, shown as locked.
            #expect(try SecureDictionary.items(applicationID: test.appID).map(\.isLocked) == [true])
        }

        /// Adoption reads no item KeePassXC would ask about: it reports it, writes nothing
        /// and, asked to retire what it adopts, removes nothing.
        @Test(.timeLimit(.minutes(2))) func adoptingAnItemKeePassXCAsksAccessToReportsItAndLeavesItAlone() throws {
            try restartKeePassXC(confirmingAccess: true)
            defer { try? restartKeePassXC(confirmingAccess: false) }
            let service = "adopt-asking-\(UUID().uuidString)"
            let app = "it.adopt.asking.\(UUID().uuidString)"
            // Another process creates the item: KeePassXC lets its creator read it, no one else.
            let made = try KeyringIntegration.Adoption.pythonRetrying(
                "import keyring; keyring.set_password('\(service)', 'alice', 'token-alice')")
            try #require(made.succeeded, "\(made.stderr)")
            let options = SecureDictionary.Options(store: SecretServiceStore())
            let report = try SecureDictionary.adopt(
                .pythonKeyring(service: service), into: "tokens", applicationID: app, options: options, retire: .delete)
            #expect(report.items.map(\.outcome) == [.needsConfirmation], "\(report)")
            #expect(report.items.map(\.retirement) == [.kept], "\(report)")
            #expect(try SecureDictionary.items(applicationID: app).isEmpty)  // no dictionary was created

            try restartSavingWithoutConfirmations()
            let kept = try KeyringIntegration.Adoption.pythonRetrying(
                "import keyring; print(keyring.get_password('\(service)', 'alice'))"
            ) { $0.trimmedText == "token-alice" }
            #expect(kept.trimmedText == "token-alice", "\(kept)")
        }
    }
}
