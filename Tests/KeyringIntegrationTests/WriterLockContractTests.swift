import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// "Every writer of one stored item takes the same lock", whatever alias names
    /// its collection, and that lock is the documented bus name, so another tool can take it.
    @Suite struct WriterLockContract {
        /// Another tool (python, by the formula of README's "The stored item", not by the
        /// library's code) holds the lock: a write through every alias of the collection
        /// waits for it, and names it at the deadline. Before the name stopped depending on
        /// the alias, a write through `login` on gnome-keyring went ahead under a lock of its
        /// own (and 187 of 400 writes were lost between writers naming it differently).
        @Test(.timeLimit(.minutes(1))) func anotherToolHoldingTheDocumentedNameHoldsOffWritersThroughEveryAlias() throws {
            let test = TestItem("lock-contract")
            try test.open().setValue("before", forKey: "k")
            let holder = try LockHolder(applicationID: test.appID, dictionary: test.name)
            defer { holder.release() }

            let aliases = try Self.aliasesOfTheDefaultCollection()
            for alias in aliases {
                let options = SecureDictionary.Options(
                    collection: KeyringCollection(alias: alias), timeout: .seconds(1), store: SecretServiceStore())
                let dictionary = try test.open(options)
                do {
                    try dictionary.setValue("through \(alias)", forKey: "k")
                    Issue.record("a write through '\(alias)' went ahead while another tool held the lock")
                } catch .lockHeld(let pid, _) {
                    #expect(pid == holder.pid, "through '\(alias)': the holder named is \(pid), not \(holder.pid)")
                } catch {
                    Issue.record("through '\(alias)': \(error)")
                }
            }
            holder.release()
            try test.open(.init(store: SecretServiceStore())).setValue("after", forKey: "k")
            #expect(try test.openFresh()["k"] == "after")
            if PrivateKeyring.provider == "gnome-keyring" { #expect(aliases == ["default", "login"]) }
        }

        /// `default`, and every other alias this provider resolves to the same collection
        /// (gnome-keyring: `login`; KWallet and KeePassXC: none).
        static func aliasesOfTheDefaultCollection() throws -> [String] {
            let paths = try ["default", "login"].map { alias in
                let output = try KeyringHarness.fixture(["alias", alias])
                return output.status == 0 ? output.trimmedText : nil
            }
            return zip(["default", "login"], paths).compactMap { alias, path in
                path != nil && path == paths[0] ? alias : nil
            }
        }
    }
}

/// `scripts/keyring-fixture.py hold-lock`: another process holding an item's writer lock
/// until ``release()``.
final class LockHolder {
    let pid: Int
    private let process: LiveChild

    init(applicationID: String, dictionary: String) throws {
        process = try LiveChild(
            PrivateKeyring.packageRoot.appendingPathComponent("scripts/keyring-fixture.py").path,
            ["hold-lock", "--app", applicationID, "--name", dictionary])
        // "held NAME pid PID" once the name is ours.
        let line = process.nextLine(timeout: .seconds(60)) ?? ""
        let words = line.split(separator: " ")
        guard words.first == "held", let pid = words.last.flatMap({ Int($0) }) else {
            process.kill(SIGKILL)
            process.finish()
            throw LockHolderError(output: line)
        }
        self.pid = pid
    }

    /// Closes the holder's standard input: it gives the name back and exits.
    func release() {
        process.finish()
    }

    struct LockHolderError: Error, CustomStringConvertible {
        let output: String
        var description: String { "keyring-fixture.py hold-lock did not take the lock: \(output)" }
    }
}
