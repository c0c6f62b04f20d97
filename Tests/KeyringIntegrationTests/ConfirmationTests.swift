import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// Issue 11: KeePassXC, by its own default, asks its user before a client reads an item
    /// the first time, and hides the item as "locked" until then. That is
    /// `confirmationRequired` at once, with no dialog, never `locked` (which would send the
    /// user to unlock a database that is open). The private KeePassXC runs with it off; this
    /// test restarts it with it on.
    @Suite(.enabled(if: PrivateKeyring.provider == "keepassxc", "only KeePassXC asks for confirmations headless"))
    struct Confirmations {
        private func restartKeePassXC(confirmingAccess: Bool) throws {
            for output in try PrivateKeyring.restartKeePassXC(confirmingAccess: confirmingAccess) {
                #expect(output.status == 0, "keyring-daemon: \(output.stderr)")
            }
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
    }
}
