import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// On real providers: an error names the provider that answered and
    /// its fix, and where no unlock dialog can be shown, the dialog allowed by `--unlock` or
    /// `Options.unlock` is `locked`, never "cancelled".
    @Suite struct ErrorAdvice {
        @Test func aLockedKeyringsMessageNamesTheProviderAndItsFix() throws {
            let test = TestItem("locked-message")
            let dictionary = try test.open(.init(store: SecretServiceStore()))
            try dictionary.setValue("v", forKey: "k")
            try KeyringHarness.daemon("lock")
            defer { try? KeyringHarness.daemon("unlock") }
            let names = ["gnome-keyring": "gnome-keyring", "kwallet": "KWallet", "keepassxc": "KeePassXC"]
            let expected = try #require(names[PrivateKeyring.provider])
            do {
                try dictionary.setValue("w", forKey: "k")
                Issue.record("a write to a locked keyring went through")
            } catch .locked {
                let text = SecureDictionaryError.locked.description
                #expect(text.contains(expected), "\(text)")
                #expect(text.count <= 200, "\(text)")
            } catch {
                Issue.record("\(error)")
            }
        }

        /// A private gnome-keyring of its own, started without GNOME's prompter, locked: the
        /// `wait-for-keyring --ask` example (unlock dialog allowed) says at once that no dialog
        /// can be shown and how to unlock from the shell. It said "the keyring's unlock
        /// dialog was cancelled" after 56 ms, although nobody cancelled anything.
        @Test(
            .timeLimit(.minutes(1)),
            .enabled(if: PrivateKeyring.provider == "gnome-keyring", "the prompter is gnome-keyring's"))
        func whereNoDialogCanBeShownAnUnlockIsLockedWithTheShellsFix() throws {
            let script = PrivateKeyring.packageRoot.appendingPathComponent("scripts/with-private-keyring").path
            let example = PrivateKeyring.builtProduct("wait-for-keyring")
            let started = ContinuousClock.now
            let output = try KeyringHarness.run(
                script,
                [
                    "--", "bash", "-c", "\"$1\" lock && exec \"$2\" --ask", "inner",
                    PrivateKeyring.packageRoot.appendingPathComponent("scripts/keyring-daemon").path, example,
                ])
            let text = output.text + output.stderr
            #expect(output.status == 1, "\(text)")
            #expect(text.contains("no unlock dialog can be shown here"), "\(text)")
            #expect(text.contains("gnome-keyring-daemon --replace --unlock"), "\(text)")
            #expect(!text.contains("cancelled"), "\(text)")
            #expect(ContinuousClock.now - started < .seconds(30))
        }
    }
}
