import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// Invariants 1–4 against the real daemon: locked, frozen, restarted, corrupt, absent.
    @Suite struct Failures {
        /// An alias the provider does not offer is its own error, not "no Secret
        /// Service" (which told the user to start a keyring that was running).
        @Test func anAliasWithoutACollectionIsNamedAsSuch() throws {
            let test = TestItem("alias")
            let options = SecureDictionary.Options(collection: KeyringCollection(alias: "sd-no-such-alias"))
            let expected = SecureDictionaryError.noSuchCollection(alias: "sd-no-such-alias")
            #expect(throws: expected) { try test.open(options) }
            #expect(throws: expected) { try SecureDictionary.items(applicationID: test.appID, options: options) }
            #expect(!expected.description.contains("start a keyring"))
            #expect(try test.open()["k"] == nil)  // the default collection is there all along
        }

        /// A read whose first try meets a restarted daemon gives the answer of its second try.
        /// Any operation's later answer became `connectionLost` once a try had died with its
        /// connection, which is right for a write only (it may have landed).
        @Test func aReadAfterADaemonRestartGivesItsOwnAnswer() throws {
            let store = SecretServiceStore()
            let test = TestItem("restart-read")
            try test.open(.init(store: store)).setValue("v", forKey: "k")  // this store's connection is open
            try KeyringHarness.daemon("restart")
            let missing = SecureDictionary.Options(collection: KeyringCollection(alias: "sd-no-such-alias"), store: store)
            #expect(throws: SecureDictionaryError.noSuchCollection(alias: "sd-no-such-alias")) { try test.open(missing) }
        }

        @Test func lockedCollectionIsAnErrorNeverEmpty() throws {
            let test = TestItem("locked")
            let dictionary = try test.open()
            try dictionary.setValue("before", forKey: "k")
            let digest = try test.sha256()

            try KeyringHarness.daemon("lock")
            defer { try? KeyringHarness.daemon("unlock") }
            // libsecret's plain lookup returns NULL without an error here; we must not.
            #expect(throws: SecureDictionaryError.locked) { try test.openFresh() }
            #expect(throws: SecureDictionaryError.locked) { try TestItem("never-written").openFresh() }
            #expect(throws: SecureDictionaryError.locked) { try dictionary.setValue("after", forKey: "k") }
            #expect(dictionary["k"] == "before")  // the cache followed the store
            if PrivateKeyring.provider == "keepassxc" {
                // KeePassXC hides the items of a locked database: no list, rather than an empty one.
                #expect(throws: SecureDictionaryError.locked) { try SecureDictionary.names(applicationID: test.appID) }
            } else {
                // Names are attributes, which gnome-keyring and KWallet show for locked items too.
                #expect(try SecureDictionary.names(applicationID: test.appID) == ["locked"])
                #expect(try SecureDictionary.items(applicationID: test.appID).map(\.isLocked) == [true])
            }

            try KeyringHarness.daemon("unlock")
            #expect(try test.sha256() == digest)  // untouched while locked
            #expect(try test.openFresh()["k"] == "before")
            try dictionary.setValue("after", forKey: "k")
            #expect(try test.openFresh()["k"] == "after")
        }

        @Test func frozenDaemonTimesOutAtTheDeadline() throws {
            let test = TestItem("frozen")
            try test.open().setValue("kept", forKey: "k")
            try KeyringHarness.daemon("freeze")
            var thawed = false
            defer { if !thawed { try? KeyringHarness.daemon("thaw") } }

            let start = ContinuousClock.now
            #expect(throws: SecureDictionaryError.timedOut) { try test.openFresh(timeout: .seconds(1)) }
            let elapsed = ContinuousClock.now - start
            // Not a performance goal: this only proves we did not wait for D-Bus's own 25 s.
            #expect(elapsed < .seconds(5), "took \(elapsed)")

            try KeyringHarness.daemon("thaw")
            thawed = true
            #expect(try test.openFresh()["k"] == "kept")
        }

        @Test func reconnectsAfterTheDaemonRestarts() throws {
            let test = TestItem("restart")
            let dictionary = try test.open()
            try dictionary.setValue("one", forKey: "k")
            try KeyringHarness.daemon("restart")  // kill -9, start again, unlock
            try dictionary.setValue("two", forKey: "k")  // same store, same (dead) connection
            #expect(try test.openFresh()["k"] == "two")
            try dictionary.reload()
            #expect(dictionary["k"] == "two")
        }

        @Test func corruptItemIsAnErrorAndIsNeverOverwritten() throws {
            let test = TestItem("corrupt")
            try test.plant(Data("bplist00 this is not a property list".utf8) + Data(count: 40))
            let digest = try test.sha256()
            #expect { try test.openFresh() } throws: { error in
                if case SecureDictionaryError.corrupt = error { return true }
                return false
            }
            #expect(try test.sha256() == digest)

            // An instance that loaded before the item went bad must not write over it.
            let other = TestItem("corrupt-later")
            let dictionary = try other.open()
            try dictionary.setValue("good", forKey: "k")
            try other.plant(Data([0x62, 0x70, 0x6C, 0x69, 0x73, 0x74, 0x30, 0x30, 0xC1, 0x01]) + Data(count: 40))
            let plantedDigest = try other.sha256()
            #expect(throws: SecureDictionaryError.self) { try dictionary.setValue("overwrite", forKey: "k") }
            #expect(try other.sha256() == plantedDigest)

            // The explicit, separately named way out.
            #expect(try SecureDictionary.delete(name: "corrupt", applicationID: test.appID))
            #expect(try test.openFresh().isEmpty)
        }

        @Test func unavailableBusIsATypedErrorQuickly() throws {
            // A separate process: GLib caches the session bus, so the address is set at start.
            let output = try KeyringHarness.run(
                KeyringHarness.writer, ["probe", "it.nobus", "nobus", "3000"],
                environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus"])
            #expect(output.text.hasPrefix("error serviceUnavailable"), "\(output.text) \(output.stderr)")
        }
    }
}

extension KeyringIntegration.Failures {
    @Test func severalMatchingItemsAreAmbiguousNotGuessed() throws {
        let test = TestItem("ambiguous")
        try test.open().setValue("ours", forKey: "k")
        // A second item whose attributes include ours (plus one more) matches the same search.
        let extra = try KeyringHarness.fixture(
            ["plant", "--label", try test.item.name, "--attr", "extra=1"] + test.fixtureAttributes,
            input: Data("bplist00".utf8))
        #expect(extra.status == 0, "\(extra.stderr)")
        #expect(throws: SecureDictionaryError.ambiguous(count: 2)) { try test.openFresh() }
        #expect(try SecureDictionary.delete(name: test.name, applicationID: test.appID))
        #expect(try test.openFresh().isEmpty)
    }

    @Test func hostileBlobsFromTheDaemonAreTypedErrors() throws {
        let test = TestItem("hostile")
        // A binary plist whose root dictionary holds a set (crashes Foundation on Linux).
        var set = Data("bplist00".utf8)
        set += Data([0xD1, 0x01, 0x02, 0x51, 0x6B, 0xC1, 0x03, 0x10, 0x01])  // {"k": set([1])}
        set += Data([0x08, 0x0B, 0x0D, 0x0F])  // offset table
        set += Data(count: 6) + Data([1, 1]) + Data([0, 0, 0, 0, 0, 0, 0, 4])  // trailer
        set += Data(count: 7) + Data([0]) + Data([0, 0, 0, 0, 0, 0, 0, 17])
        for blob in [
            set, Data(), Data("<?xml version=\"1.0\"?><plist><dict/></plist>".utf8),
            Data((0..<512).map { _ in UInt8.random(in: 0...255) }),
        ] {
            try test.plant(blob)
            let digest = try test.sha256()
            #expect(throws: SecureDictionaryError.self) { try test.openFresh() }
            #expect(try test.sha256() == digest)
        }
    }
}

extension KeyringIntegration.Failures {
    /// The keyring's own signal ends the wait; polling alone (set to a minute
    /// here) could not. Prints the delay from the unlock to the opened dictionary.
    @Test func anUnlockByAnotherClientEndsTheWaitAtOnce() async throws {
        let test = TestItem("wait-unlock")
        try test.open().setValue("v", forKey: "k")
        try KeyringHarness.daemon("lock")
        var unlocked = false
        defer { if !unlocked { try? KeyringHarness.daemon("unlock") } }
        let opening = Task {
            let dictionary = try await SecureDictionary.Async.openWhenUnlocked(
                name: test.name, applicationID: test.appID, options: .init(store: SecretServiceStore()),
                checkingEvery: .seconds(60))
            return (dictionary, ContinuousClock.now)
        }
        try await Task.sleep(for: .milliseconds(300))
        let unlockStarted = ContinuousClock.now
        try KeyringHarness.daemon("unlock")  // another client unlocks (no prompt, as a login would)
        let unlockReturned = ContinuousClock.now
        unlocked = true
        let (dictionary, openedAt) = try await opening.value
        #expect(dictionary["k"] == "v")
        // An upper bound: from the start of the other client's unlock command (which also
        // checks its work before it returns) to the dictionary opened here.
        let delay = openedAt - unlockStarted
        print(
            "unlock wait: opened \(delay) after the unlock command started (the command took \(unlockReturned - unlockStarted))")
        #expect(delay < .seconds(5), "the wait ended only after \(delay): no signal arrived")
    }

    /// The runnable example says it waits, and goes on once unlocked. Not on
    /// KWallet: the harness can unlock it only by restarting kwalletd (scripts/providers/kwallet),
    /// and a look of the example's (every 2 s) that falls in that gap finds no Secret Service,
    /// which ends a wait by design (UnlockWaitTests.otherErrorsEndTheWait); it did so once in
    /// Debian 13's run on 2026-11-25. A user's unlock restarts nothing.
    @Test(.enabled(if: PrivateKeyring.provider != "kwallet", "KWallet unlocks here only by restarting kwalletd"))
    func theWaitForKeyringExampleWaitsAndGoesOnByItself() async throws {
        try TestItem("example-warm-up").open().setValue(1, forKey: "k")  // the keyring exists
        try KeyringHarness.daemon("lock")
        var unlocked = false
        defer { if !unlocked { try? KeyringHarness.daemon("unlock") } }
        let running = Task.detached {
            try KeyringHarness.run(PrivateKeyring.builtProduct("wait-for-keyring"), [])
        }
        try await Task.sleep(for: .seconds(1))
        try KeyringHarness.daemon("unlock")
        unlocked = true
        let output = try await running.value
        #expect(output.succeeded, "\(output)")
        let lines = output.text.split(separator: "\n")
        #expect(lines.first?.hasPrefix("Waiting for your keyring to be unlocked") == true, "\(output)")
        #expect(lines.last?.hasPrefix("The keyring is unlocked: this example has run") == true, "\(output)")
    }
}
