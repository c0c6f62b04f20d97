import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary
@testable import SecureDictionaryFileStore

extension KeyringIntegration {
    /// Issue 35, points 1 and 8: `AutomaticStore` against the real keyring, stopped, started
    /// and restarted under it. It never chooses the files while a keyring is on its way (the
    /// dictionary would be split in two), and a move onto what it will choose is the same store.
    @Suite(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "the choice is the same for every provider"))
    struct AutomaticChoice {
        let test = TestItem("automatic")

        // MARK: Moves (issue 35.8)

        /// An `AutomaticStore` not used yet chooses the keyring when asked where it keeps its
        /// items: a move between it and the keyring is refused at once as one store. It once
        /// waited for its own writer lock until the deadline and threw `timedOut`.
        @Test(.timeLimit(.minutes(1))) func aMoveBetweenTheKeyringAndAnAutomaticStoreNotUsedYetIsTheSameStore() throws {
            try test.open().setValue("kept", forKey: "k")
            let sameStore = SecureDictionaryError.sameStore(name: try test.item.name)
            #expect(throws: sameStore) {
                try SecureDictionary.move(
                    name: test.name, applicationID: test.appID, from: SecretServiceStore.shared, to: AutomaticStore(),
                    timeout: .seconds(2))
            }
            #expect(throws: sameStore) {
                try SecureDictionary.move(
                    name: test.name, applicationID: test.appID, from: AutomaticStore(), to: SecretServiceStore.shared,
                    timeout: .seconds(2))
            }
            #expect(try test.openFresh()["k"] == "kept")
        }
    }
}
