import Configuration
import ConfigurationTesting
import Foundation
import SecureDictionaryConfiguration
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// SecureDictionaryProvider (swift-configuration) on the real keyring: it passes
    /// `ProviderCompatTest`, its watches hear other processes' writes, and a fetch loads them.
    @Suite struct ConfigurationProvider {
        func secret(_ string: String) -> ConfigValue { ConfigValue(.string(string), isSecret: true) }

        @Test func passesProviderCompatTestOnTheKeyring() async throws {
            let test = TestItem("config-compat")
            try test.open().update { $0.dictionary = ProviderCompatEntries.all }
            // Read through a new connection and cache: what the keyring holds, not this process's memory.
            try await ProviderCompatTest(provider: SecureDictionaryProvider(try test.openFresh())).runTest()
        }

        // A change that never arrives must fail the run, not hang it.
        @Test(.timeLimit(.minutes(1))) func watchValueHearsAnotherProcessesWriteMarkedSecret() async throws {
            let test = TestItem("config-watch-value")
            let dictionary = try test.open()
            try dictionary.setValue("first", forKey: "api.token")
            try await SecureDictionaryProvider(dictionary).watchValue(forKey: ["api", "token"], type: .string) { updates in
                var iterator = updates.makeAsyncIterator()
                #expect(try await iterator.next()?.get().value == secret("first"))
                // The watch listens before its first element: a write from now on is heard.
                let other = try KeyringHarness.run(KeyringHarness.writer, ["set", test.appID, test.name, "api.token", "second"])
                #expect(other.status == 0, "\(other.stderr)")
                #expect(try await iterator.next()?.get().value == secret("second"))
            }
        }

        @Test(.timeLimit(.minutes(1))) func watchSnapshotHearsAnotherProcessesWrite() async throws {
            let test = TestItem("config-watch-snapshot")
            let dictionary = try test.open()
            try dictionary.setValue("app", forKey: "database.user")
            try await SecureDictionaryProvider(dictionary).watchSnapshot { snapshots in
                var iterator = snapshots.makeAsyncIterator()
                let first = try #require(await iterator.next())
                #expect(try first.value(forKey: ["database", "password"], type: .string).value == nil)
                let other = try KeyringHarness.run(
                    KeyringHarness.writer, ["set", test.appID, test.name, "database.password", "s3cr3t"])
                #expect(other.status == 0, "\(other.stderr)")
                let second = try #require(await iterator.next())
                #expect(try second.value(forKey: ["database", "password"], type: .string).value == secret("s3cr3t"))
                #expect(try second.value(forKey: ["database", "user"], type: .string).value == secret("app"))
            }
        }

        @Test func fetchValueLoadsAnotherProcessesWriteWhereValueAnswersFromMemory() async throws {
            let test = TestItem("config-fetch")
            let dictionary = try test.open()
            try dictionary.setValue("old", forKey: "api.token")
            let provider = SecureDictionaryProvider(dictionary)
            let other = try KeyringHarness.run(KeyringHarness.writer, ["set", test.appID, test.name, "api.token", "new"])
            #expect(other.status == 0, "\(other.stderr)")
            #expect(try provider.value(forKey: ["api", "token"], type: .string).value == secret("old"))
            #expect(try await provider.fetchValue(forKey: ["api", "token"], type: .string).value == secret("new"))
            #expect(try provider.value(forKey: ["api", "token"], type: .string).value == secret("new"))
        }
    }
}
