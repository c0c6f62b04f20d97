import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// `changes(forKey:)` on the real keyring: another process's write to the key reaches the
    /// stream, through the keyring's own signals; its write to another key, once this process
    /// has loaded it, does not.
    @Suite struct KeyChanges {
        // A change that never arrives must fail the run, not hang it.
        @Test(.timeLimit(.minutes(1))) func anotherProcessesWriteToTheKeyArrivesAndToAnotherKeyDoesNot() async throws {
            let test = TestItem("key-changes")
            let dictionary = try test.open()
            try dictionary.setValue("first", forKey: "watched")
            var watched = dictionary.changes(forKey: "watched").makeAsyncIterator()
            var every = dictionary.changes().makeAsyncIterator()  // the witness that this process loaded a write
            for round in 0..<3 {
                try set("other", to: "other-\(round)", in: test)
                #expect(await every.next()?.key == "other", "round \(round): the other write was not loaded")
                try set("watched", to: "watched-\(round)", in: test)
                #expect(await every.next()?.key == "watched")
                // The other key's write was loaded before this one: had it reached the stream, it would come first.
                let change = await watched.next()
                #expect(change?.key == "watched" && change?.newValue == .string("watched-\(round)"), "round \(round)")
                #expect(change?.kind == .updated)
            }
        }

        func set(_ key: String, to value: String, in test: TestItem) throws {
            let output = try KeyringHarness.run(KeyringHarness.writer, ["set", test.appID, test.name, key, value])
            #expect(output.status == 0, "\(output.stderr)")
        }
    }
}
