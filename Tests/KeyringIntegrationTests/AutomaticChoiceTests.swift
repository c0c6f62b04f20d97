import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary
@testable import SecureDictionaryFileStore

extension KeyringIntegration {
    /// `AutomaticStore` against the real keyring, stopped, started
    /// and restarted under it. It never chooses the files while a keyring is on its way (the
    /// dictionary would be split in two), and a move onto what it will choose is the same store.
    @Suite(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "the choice is the same for every provider"))
    struct AutomaticChoice {
        let test = TestItem("automatic")
        let base: String

        init() throws {
            base = try TemporaryFolder.create("sd-auto", credential: true)
        }

        /// `sd-test-writer` with an `AutomaticStore` whose file store keeps its files in
        /// `base/files` under a credential.
        func environment(timeout milliseconds: Int = 3_000) -> [String: String] {
            [
                "SD_TEST_WRITER_STORE": "automatic", "SD_TEST_WRITER_FILE_STORE": "credential",
                "CREDENTIALS_DIRECTORY": "\(base)/credentials", "SD_TEST_WRITER_FOLDER": "\(base)/files",
                "SD_TEST_WRITER_TIMEOUT_MS": "\(milliseconds)",
            ]
        }

        func writer(_ arguments: [String], timeout milliseconds: Int = 3_000) throws -> ChildProcess.Output {
            try KeyringHarness.run(KeyringHarness.writer, arguments, environment: environment(timeout: milliseconds))
        }

        /// The item files the file store wrote: none, whenever a keyring was on its way.
        var itemFiles: [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "\(base)/files")) ?? []).filter { $0.hasSuffix(".sdict") }
        }

        /// Stops the private keyring for `body`, and starts it again after (if `body` did not).
        func withKeyringStopped(_ body: () throws -> Void) throws {
            try KeyringHarness.daemon("stop")
            defer { if (try? PrivateKeyring.daemon("pid").succeeded) != true { try? KeyringHarness.daemon("start") } }
            try body()
        }

        // MARK: The choice while the keyring is away

        /// A first choice, made while the keyring starts, waits for it: the keyring, not the
        /// files (which it once took at once, silently).
        @Test(.timeLimit(.minutes(1))) func aFirstChoiceMadeWhileTheKeyringStartsIsTheKeyring() throws {
            try withKeyringStopped {
                let choosing = try LiveChild(KeyringHarness.writer, ["choice"], environment: environment(timeout: 10_000))
                defer { choosing.finish() }
                try KeyringHarness.daemon("start")
                #expect(choosing.waitUntil(timeout: .seconds(30)) { !$0.isEmpty })
                #expect(choosing.lines.first?.hasPrefix("ok secretService ") == true, "\(choosing.lines)")
            }
            #expect(try writer(["set", test.appID, test.name, "k", "v"]).succeeded)
            #expect(try test.openFresh()["k"] == "v")
            #expect(itemFiles.isEmpty, "\(itemFiles)")
        }

        /// A store that chose the keyring once never takes the files while a session bus runs:
        /// with the keyring stopped past the deadline, each call is an error; once it is back,
        /// the keyring.
        @Test(.timeLimit(.minutes(1))) func aStoreThatChoseTheKeyringFailsWhileItIsStoppedInsteadOfTakingTheFiles() throws {
            #expect(try writer(["set", test.appID, test.name, "k", "before"]).succeeded)
            try withKeyringStopped {
                let choice = try writer(["choice"], timeout: 1_000)
                #expect(choice.trimmedText.hasPrefix("error serviceUnavailable "), "\(choice)")
                let write = try writer(["set", test.appID, test.name, "k", "while stopped"], timeout: 1_000)
                #expect(!write.succeeded, "\(write)")
                try KeyringHarness.daemon("start")
            }
            #expect(try writer(["choice"]).trimmedText.hasPrefix("ok secretService "))
            #expect(try test.openFresh()["k"] == "before")
            #expect(itemFiles.isEmpty, "\(itemFiles)")
        }

        /// The case as reported: a process started during a 2 s stop of the keyring keeps
        /// writing after it is back, every write in the keyring (it once wrote 109 times to the
        /// files).
        @Test(.timeLimit(.minutes(2))) func aProcessStartedDuringAStopOfTheKeyringNeverWritesToTheFiles() throws {
            #expect(try writer(["set", test.appID, test.name, "k", "before"]).succeeded)
            var calls: [String] = []
            try withKeyringStopped {
                let pounding = try LiveChild(
                    KeyringHarness.writer, ["pound", test.appID, test.name, "1"], environment: environment(timeout: 6_000))
                defer { pounding.finish() }
                Thread.sleep(forTimeInterval: 2)  // the stop itself: the reported 2 s
                try KeyringHarness.daemon("start")
                let wrote = pounding.waitUntil(timeout: .seconds(60)) { lines in
                    lines.filter { $0.hasPrefix("call 0 ok ") }.count >= 20
                }
                calls = pounding.lines
                #expect(wrote, "\(calls.suffix(5))")
            }
            #expect(calls.first == "ready", "\(calls.prefix(3))")
            #expect(itemFiles.isEmpty, "\(itemFiles)")
            let written = try #require(try test.openFresh()["t0"]?.integerValue)
            #expect(written >= 19)
        }

        /// A keyring that is there but locked, frozen, or behind a frozen bus is never taken
        /// for "no Secret Service here": locked is the keyring (with its error to fix), and
        /// the other two choose nothing by the deadline.
        @Test(.timeLimit(.minutes(1))) func aLockedOrFrozenKeyringOrAFrozenBusIsNeverTheFiles() throws {
            try KeyringHarness.daemon("lock")
            let locked = try writer(["choice"], timeout: 1_000)
            try KeyringHarness.daemon("unlock")
            #expect(locked.trimmedText.hasPrefix("ok secretService "), "\(locked)")

            try KeyringHarness.daemon("freeze")
            let frozen = try writer(["choice"], timeout: 1_000)
            try KeyringHarness.daemon("thaw")
            #expect(frozen.trimmedText.hasPrefix("error timedOut "), "\(frozen)")

            let bus = try #require(privateBusPID)
            kill(bus, SIGSTOP)
            let frozenBus = try? writer(["choice"], timeout: 1_000)
            kill(bus, SIGCONT)
            #expect(frozenBus?.trimmedText.hasPrefix("error timedOut ") == true, "\(String(describing: frozenBus))")
            #expect(itemFiles.isEmpty, "\(itemFiles)")
            let record = try String(contentsOfFile: "\(base)/files/automatic-store-choice", encoding: .utf8)
            #expect(record.hasPrefix("keyring\n"), "\(record)")  // the locked one's
        }

        /// A store that chose the files (on a bus with no Secret Service) takes them at once the
        /// next time, without waiting for a keyring to come.
        @Test func aStoreThatChoseTheFilesTakesThemAtOnceNextTime() throws {
            let script = PrivateKeyring.packageRoot.appendingPathComponent("scripts/with-private-keyring").path
            let choices = try (0..<2).map { _ in
                try KeyringHarness.run(
                    script, ["--no-keyring", "--", KeyringHarness.writer, "choice"], environment: environment())
            }
            for choice in choices { #expect(choice.trimmedText.hasPrefix("ok encryptedFiles "), "\(choice)") }
            let record = try String(contentsOfFile: "\(base)/files/automatic-store-choice", encoding: .utf8)
            #expect(record.hasPrefix("files\n"))
            let milliseconds = Int(choices[1].trimmedText.split(separator: " ").last ?? "") ?? .max
            #expect(milliseconds < 500, "\(choices[1])")
        }

        // MARK: Moves

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
