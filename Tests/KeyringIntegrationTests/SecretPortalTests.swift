import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// The Secret portal, for real: test processes run as Flatpak apps (`scripts/sandbox-run`:
    /// bubblewrap, a `/.flatpak-info`, the bus only through a filtering xdg-dbus-proxy), and
    /// xdg-desktop-portal with gnome-keyring's Secret backend hands them their master secret
    /// (`scripts/with-private-keyring --portal`). In CI the portal is required (`scripts/test`
    /// starts it); elsewhere the suite runs when it is there.
    @Suite(
        .enabled(
            if: PrivateKeyring.provider == "gnome-keyring" && (PrivateKeyring.hasPortal || PrivateKeyring.required),
            "needs xdg-desktop-portal and gnome-keyring: scripts/with-private-keyring --portal"))
    struct SecretPortal {
        static let appA = "io.github.securedictionary.PortalA"
        static let appB = "io.github.securedictionary.PortalB"
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("sd-app-\(UUID().uuidString)").path
        let test = TestItem("portal")

        /// Runs sd-test-writer as app `appID` with the Secret portal's files as its store.
        private func app(
            _ arguments: [String], appID: String = appA, data: String? = nil, talk: [String] = [],
            store: String = "portal", timeoutMilliseconds: Int = 3_000, killedAfter: Duration? = nil
        ) throws -> ChildProcess.Output {
            let output = try PrivateKeyring.sandboxed(
                appID: appID, talk: talk, data: data ?? self.data, KeyringHarness.writer, arguments,
                environment: ["SD_TEST_WRITER_STORE": store, "SD_TEST_WRITER_TIMEOUT_MS": "\(timeoutMilliseconds)"],
                timeout: killedAfter ?? .seconds(300))
            if killedAfter == nil { #expect(!output.signaled && !output.timedOut, "\(arguments): \(output)") }
            return output
        }

        private var files: [String] {
            (try? FileManager.default.contentsOfDirectory(atPath: "\(data)/securedictionary")) ?? []
        }

        @Test func aSandboxedAppKeepsItsDictionaryInAnEncryptedFile() throws {
            let canary = "canary-\(UUID().uuidString)"
            #expect(try app(["set", test.appID, test.name, "token", canary]).trimmedText.hasPrefix("ok "))
            #expect(try app(["get", test.appID, test.name, "token"]).trimmedText == "ok \(canary)")
            let stored = files.filter { $0.hasSuffix(".sdict") }
            #expect(stored.count == 1)
            for file in stored {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: "\(data)/securedictionary/\(file)"))
                #expect(bytes.range(of: Data(canary.utf8)) == nil, "the value in clear on disk")
            }
            // Nothing in the keyring: the app cannot reach it.
            #expect(try test.openFresh().count == 0)
        }

        @Test func withoutThePortalStoreTheSandboxSaysWhatToDo() throws {
            let output = try app(["probe", test.appID, test.name, "3000"], store: "secret-service")
            #expect(output.trimmedText.hasPrefix("error sandboxed"), "\(output)")
        }

        @Test func anotherAppCannotReadTheFile() throws {
            #expect(try app(["set", test.appID, test.name, "token", "s3cr3t"]).trimmedText.hasPrefix("ok "))
            let other = FileManager.default.temporaryDirectory.appendingPathComponent("sd-app-\(UUID().uuidString)").path
            try FileManager.default.copyItem(atPath: data, toPath: other)
            let read = try app(["get", test.appID, test.name, "token"], appID: Self.appB, data: other)
            // The key check tells another app's secret from a damaged file.
            #expect(read.trimmedText == "error wrongKey", "\(read)")
        }

        @Test func processesOfTheAppLoseNoWrite() async throws {
            let writers = 4
            let (count, increments) = (40, 10)
            let outputs = try await withThrowingTaskGroup(of: ChildProcess.Output.self) { group in
                for index in 0..<writers {
                    group.addTask {
                        try app(["write", test.appID, test.name, "p\(index)", "\(count)", "\(increments)"])
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for output in outputs { #expect(output.trimmedText == "ok \(increments)", "\(output)") }
            let probe = try app(["probe", test.appID, test.name, "3000"])
            // Each writer leaves count − count/10 keys (every tenth is removed again), plus the counter.
            #expect(probe.trimmedText == "ok \(writers * (count - count / 10) + 1)", "\(probe)")
        }

        /// Atomic replacement: a writer killed (SIGKILL) at any moment leaves the old file or
        /// the new one, never a torn one, and never a lock that blocks the next writer.
        @Test func aWriterKilledMidWriteLeavesAWholeFile() throws {
            var killed = 0
            for round in 0..<12 {
                let delay = Duration.milliseconds(150 + 60 * round)
                let output = try app(["write", test.appID, test.name, "r\(round)", "400", "0"], killedAfter: delay)
                if output.timedOut { killed += 1 }
                let probe = try app(["probe", test.appID, test.name, "3000"])
                #expect(probe.trimmedText.hasPrefix("ok "), "round \(round): \(probe)")
            }
            #expect(killed >= 6, "only \(killed) of 12 writers were killed while writing: make them write longer")
            #expect(try app(["set", test.appID, test.name, "after", "kills"]).trimmedText.hasPrefix("ok "))
        }

        @Test func aDictionaryMovesFromTheHostKeyringVerified() throws {
            try test.open().setValue("from the keyring", forKey: "token")
            let moved = try app(["move", test.appID, test.name], talk: ["org.freedesktop.secrets"])
            #expect(moved.trimmedText == "ok moved", "\(moved)")
            #expect(try test.openFresh().count == 0)  // removed from the keyring
            #expect(try app(["get", test.appID, test.name, "token"]).trimmedText == "ok from the keyring")
            let again = try app(["move", test.appID, test.name], talk: ["org.freedesktop.secrets"])
            #expect(again.trimmedText == "ok absent", "\(again)")
        }

        /// Stores a value, locks the keyring, reads it from a new app process, whose portal
        /// request makes gnome-keyring show its unlock dialog, and answers the dialog with
        /// `answer` (a `scripts/prompter` command). Returns what the read printed.
        private func readWhileLocked(answering answer: String) async throws -> String {
            #expect(try app(["set", test.appID, test.name, "token", "kept"]).trimmedText.hasPrefix("ok "))
            try KeyringHarness.daemon("lock")
            defer { try? KeyringHarness.daemon("unlock") }
            let reading = Task.detached { [self] in
                try app(["get", test.appID, test.name, "token"], timeoutMilliseconds: 30_000)
            }
            #expect(try PrivateKeyring.prompter("wait-shown").succeeded)
            #expect(try PrivateKeyring.prompter(answer).succeeded)
            let printed = try await reading.value.trimmedText
            #expect(try PrivateKeyring.prompter("wait-gone").succeeded)
            return printed
        }

        @Test(.enabled(if: PrivateKeyring.hasPrompter || PrivateKeyring.required, "needs --prompter"))
        func aLockedKeyringShowsItsDialogAndTheAppGoesOnOnceUnlocked() async throws {
            #expect(try await readWhileLocked(answering: "type-password") == "ok kept")
        }

        @Test(.enabled(if: PrivateKeyring.hasPrompter || PrivateKeyring.required, "needs --prompter"))
        func cancellingThePortalsDialogIsLocked() async throws {
            #expect(try await readWhileLocked(answering: "cancel") == "error locked")
        }

        /// A dictionary without a file is not empty outside a sandbox (it once opened
        /// as "ok 0"), and a refused write creates no folder.
        @Test func outsideASandboxThePortalStoreRefuses() throws {
            let output = try KeyringHarness.run(
                KeyringHarness.writer, ["probe", test.appID, test.name, "3000"],
                environment: ["SD_TEST_WRITER_STORE": "portal", "XDG_DATA_HOME": data])
            #expect(output.trimmedText.hasPrefix("error portalUnavailable"), "\(output)")
            let write = try KeyringHarness.run(
                KeyringHarness.writer, ["set", test.appID, test.name, "k", "v"],
                environment: ["SD_TEST_WRITER_STORE": "portal", "XDG_DATA_HOME": data])
            #expect(!write.succeeded && write.stderr.contains("Secret portal"), "\(write)")
            #expect(!FileManager.default.fileExists(atPath: "\(data)/securedictionary"), "a refused write made the folder")
        }
    }
}
