import Foundation
import SecureDictionaryTestSupport
import Testing

/// `--store auto` whose record says the keyring, with the keyring stopped: the message cut its
/// reason mid-word ("this store's dictio") and advised `--store credential`, a store that does
/// not hold these dictionaries. It says the whole reason and the keyring's fix.
extension AutomaticChoiceCLI {
    @Test(.timeLimit(.minutes(2))) func aRecordedKeyringThatIsStoppedIsSaidWholeWithTheKeyringsFix() throws {
        // Headless (no display), whatever runs the suite: the fix asked for is the one without a desktop.
        let environment = [
            "CREDENTIALS_DIRECTORY": "\(base)/credentials", "STATE_DIRECTORY": "\(base)/state", "DISPLAY": "",
            "WAYLAND_DISPLAY": "",
        ]
        let auto = ["--store", "auto", "--file-key", "credential"]
        let first = try CLIHarness.cli(["write", "--app", app, "k", "v"] + auto, environment: environment)
        #expect(first.status == 0, "\(first)")
        let record = "\(base)/state/securedictionary/automatic-store-choice"
        #expect(try String(contentsOfFile: record, encoding: .utf8).hasPrefix("keyring\n"))
        try CLIHarness.daemon("stop")
        defer { try? CLIHarness.daemon("start") }
        let stopped = try CLIHarness.cli(["read", "--app", app, "k"] + auto, environment: environment)
        #expect(stopped.status == 3, "\(stopped)")
        // The record named whole, the keyring's fix, and the files' way out; no other store.
        #expect(stopped.stderr.contains("\(record) records that it chose the keyring"), "\(stopped.stderr)")
        #expect(stopped.stderr.contains("start the keyring that holds them again"), "\(stopped.stderr)")
        #expect(stopped.stderr.contains("remove \(record) (what the keyring holds stays there)"), "\(stopped.stderr)")
        #expect(!stopped.stderr.contains("--store credential"), "\(stopped.stderr)")
    }
}
