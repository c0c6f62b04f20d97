import Dispatch
import Foundation
import SecureDictionaryTestSupport
import Synchronization
import Testing

/// `secure-dict --store auto` while the keyring starts never writes to the
/// files (it once sent 1 of 20 writes there, silently, splitting the dictionary in two).
@Suite(
    .serialized,
    .enabled(if: CLIHarness.enabled && PrivateKeyring.provider == "gnome-keyring", "needs the private gnome-keyring"))
struct AutomaticChoiceCLI {
    let base: String
    let app = "cli.auto.\(UUID().uuidString)"

    init() throws {
        base = try TemporaryFolder.create("sd-auto-cli", credential: true)
    }

    /// Twenty `secure-dict write --store auto` started 50 ms apart, the keyring started after
    /// the tenth: every one goes to the keyring, none to the files.
    @Test(.timeLimit(.minutes(2))) func writesStartedWhileTheKeyringStartsAllGoToTheKeyring() throws {
        let environment = ["CREDENTIALS_DIRECTORY": "\(base)/credentials", "STATE_DIRECTORY": "\(base)/state"]
        let outcomes = Mutex<[Int: CLIHarness.Output]>([:])
        let writes = DispatchGroup()
        try CLIHarness.daemon("stop")
        let started = Mutex(false)
        defer { if !started.withLock({ $0 }) { try? CLIHarness.daemon("start") } }
        for index in 0..<20 {
            writes.enter()
            Thread {
                let output = try? CLIHarness.cli(
                    ["write", "--app", app, "--store", "auto", "--file-key", "credential", "--timeout", "10", "k\(index)", "v"],
                    environment: environment, timeout: .seconds(60))
                outcomes.withLock { $0[index] = output }
                writes.leave()
            }.start()
            if index == 10 {
                // The keyring starts halfway: the first writes make their choice before it is there.
                writes.enter()
                Thread {
                    let ok = (try? PrivateKeyring.daemon("start").succeeded) == true
                    started.withLock { $0 = ok }
                    writes.leave()
                }.start()
            }
            usleep(50_000)
        }
        writes.wait()
        #expect(started.withLock { $0 }, "the keyring did not start")
        let failed = outcomes.withLock { $0 }.filter { $0.value.status != 0 }
        #expect(failed.isEmpty, "\(failed.sorted { $0.key < $1.key }.prefix(3))")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: "\(base)/state/securedictionary")) ?? []
        #expect(files.filter { $0.hasSuffix(".sdict") }.isEmpty, "writes went to the files: \(files)")
        let read = try CLIHarness.cli(["read", "--app", app, "--json"])
        let missing = (0..<20).filter { !read.text.contains("\"k\($0)\"") }
        #expect(missing.isEmpty, "\(missing.count) of 20 writes are not in the keyring: k\(missing)")
    }
}
