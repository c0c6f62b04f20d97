import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// Sizes of the two runs: the small one for CI, the full one on demand.
struct Sizes: Sendable {
    let full: Bool
    /// `--sanitize thread,address` overrides the size's choice.
    var sanitizerOverride: [String]?
    var lostProcesses: Int { full ? 8 : 4 }
    var lostMutations: Int { full ? 100 : 20 }
    var lostIncrements: Int { full ? 50 : 10 }
    var killTrials: Int { full ? 1_000 : 20 }
    var fuzzInputs: Int { full ? 1_000_000 : 100_000 }
    var bitFlips: Int { full ? 256 : 24 }
    var threadOperations: Int { 1_000 }
    var mixedMutations: Int { full ? 100 : 15 }
    var outsideRounds: Int { full ? 50 : 5 }
    var windowWrites: Int { full ? 300 : 50 }
    var fairProcesses: Int { full ? 16 : 6 }
    var fairWrites: Int { full ? 100 : 20 }
    /// How long scenario 14 keeps the bus frozen (10 s at full size: ten times the writers' 1 s deadline).
    var frozenBusSeconds: Int { full ? 10 : 3 }
    /// How many times scenario 15 stops and starts the keyring under each kind of writer.
    var restartRounds: Int { full ? 5 : 1 }
    var sanitizers: [String] { sanitizerOverride ?? (full ? ["thread", "address"] : ["thread"]) }
}

/// Everything a scenario needs from the outside world: the repository, the private keyring
/// of scripts/with-private-keyring, our own executable (for workers), a scratch folder.
final class Harness: @unchecked Sendable {  // used from the main thread only
    let root: URL
    let sizes: Sizes
    let executable: String
    let scratch: URL
    let control: String?
    private var fixtureServer: FixtureServer?

    init(root: URL, sizes: Sizes) throws {
        self.root = root
        self.sizes = sizes
        executable = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
        let environment = ProcessInfo.processInfo.environment
        let control = environment["SD_TEST_KEYRING_CONTROL"]
        self.control = control.flatMap { FileManager.default.fileExists(atPath: "\($0)/password") ? $0 : nil }
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("sd-reliability-\(getpid())")
        try FileManager.default.createDirectory(
            at: scratch, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
    }

    deinit {
        fixtureServer?.stop()
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Why keyring scenarios cannot run, or `nil` when a private keyring is there.
    var keyringMissing: String? {
        control == nil
            ? "no private keyring: run inside scripts/with-private-keyring (scripts/reliability does)" : nil
    }

    /// Whether a keyring is there to test against; if not, reports `check` as not run.
    ///
    /// ```swift
    /// guard harness.hasKeyring(report, check: "memory hygiene", target: "0 fragments") else { return }
    /// ```
    func hasKeyring(_ report: Report, check: String, target: String) -> Bool {
        guard let reason = keyringMissing else { return true }
        report.cannotRun(check, target: target, reason: reason)
        return false
    }

    func script(_ name: String) -> String { root.appendingPathComponent("scripts/\(name)").path }

    /// `scripts/keyring-daemon COMMAND`.
    @discardableResult
    func daemon(_ command: String) -> ProcessResult {
        let result = Subprocess.run(script("keyring-daemon"), [command], timeout: .seconds(30))
        if !result.succeeded { log("keyring-daemon \(command) failed: \(result.how) \(result.stderr)") }
        return result
    }

    /// Runs `sd-reliability worker …` and returns what it did.
    func worker(
        _ arguments: [String], environment: [String: String?] = [:], stdin: Data? = nil,
        timeout: Duration = .seconds(120)
    ) -> ProcessResult {
        Subprocess.run(executable, ["worker"] + arguments, environment: environment, stdin: stdin, timeout: timeout)
    }

    func liveWorker(_ arguments: [String], environment: [String: String?] = [:]) throws -> LiveChild {
        try LiveChild(executable, ["worker"] + arguments, environment: environment)
    }

    /// The raw D-Bus fixture (python3-dbus), started on first use.
    func fixture() throws -> FixtureServer {
        if let fixtureServer { return fixtureServer }
        let server = try FixtureServer(
            server: root.appendingPathComponent("Reliability/fixture-server.py").path,
            fixture: script("keyring-fixture.py"), scratch: scratch)
        fixtureServer = server
        return server
    }

    func scratchFile(_ name: String) -> URL { scratch.appendingPathComponent(name) }

    /// Deletes every SecureDictionary item the scenarios made (application IDs `rel.…`), so
    /// that each scenario starts from a keyring of ordinary size: gnome-keyring's cost per
    /// call grows with the number of items it holds.
    ///
    /// - Returns: how many items were deleted (0 when the keyring cannot be listed).
    func removeScenarioItems() -> Int {
        guard let listings = try? SecureDictionary.items() else { return 0 }
        var removed = 0
        for item in Set(listings.map(\.item)) where item.applicationID.hasPrefix("rel.") {
            let name = item.dictionaryName.isEmpty ? nil : item.dictionaryName
            if (try? SecureDictionary.delete(name: name, applicationID: item.applicationID)) == true { removed += 1 }
        }
        return removed
    }

    /// A new application ID, so scenarios never see each other's items.
    func appID(_ scenario: String) -> String {
        "rel.\(scenario).\(UUID().uuidString.prefix(8).lowercased())"
    }
}

struct FixtureError: Error, CustomStringConvertible {
    var code: Int
    var message: String
    var description: String { "fixture error \(code): \(message)" }
}

/// One long-lived `fixture-server.py`: plant, read, hash and delete items raw over D-Bus.
final class FixtureServer {
    private let process: LiveChild
    private let scratch: URL
    private var counter = 0

    init(server: String, fixture: String, scratch: URL) throws {
        process = try LiveChild("/usr/bin/python3", [server, fixture])
        self.scratch = scratch
    }

    func stop() { _ = process.finish(timeout: .seconds(5)) }

    func request(_ body: [String: Any]) throws(FixtureError) -> Any {
        guard let data = try? JSONSerialization.data(withJSONObject: body),
            let line = String(data: data, encoding: .utf8)
        else { throw FixtureError(code: 2, message: "bad request") }
        try? process.send(line)
        guard let reply = process.nextLine(timeout: .seconds(120)),
            let object = try? JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any]
        else {
            throw FixtureError(code: 1, message: "no reply from fixture-server.py")
        }
        if object["ok"] as? Bool == true { return object["value"] ?? NSNull() }
        throw FixtureError(code: object["code"] as? Int ?? 1, message: object["error"] as? String ?? "?")
    }

    private func tempFile() -> URL {
        counter += 1
        return scratch.appendingPathComponent("fixture-\(counter).bin")
    }

    /// Plants `bytes` as the secret of an item with `attributes` and `label`.
    @discardableResult
    func plant(
        _ bytes: [UInt8], attributes: [String: String], label: String, replace: Bool = true,
        alias: String = "default", collection: String? = nil
    ) throws -> String {
        let file = tempFile()
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var body: [String: Any] = [
            "op": "plant", "attrs": attributes, "label": label, "file": file.path,
            "replace": replace, "alias": alias,
        ]
        if let collection { body["collection"] = collection }
        return try request(body) as? String ?? ""
    }

    /// Plants `bytes` as the secret of `item`, exactly as the library names it.
    func plant(_ bytes: [UInt8], for item: KeyringItem, replace: Bool = true) throws {
        try plant(bytes, attributes: item.attributes, label: item.name, replace: replace, alias: item.collection.alias)
    }

    func sha256(_ attributes: [String: String]) throws(FixtureError) -> String {
        try request(["op": "sha256", "attrs": attributes]) as? String ?? ""
    }

    func read(_ attributes: [String: String]) throws -> [UInt8] {
        let file = tempFile()
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try request(["op": "read", "attrs": attributes, "file": file.path])
        return [UInt8](try Data(contentsOf: file))
    }

    func count(_ attributes: [String: String]) throws(FixtureError) -> Int {
        try request(["op": "count", "attrs": attributes]) as? Int ?? -1
    }

    @discardableResult
    func delete(_ attributes: [String: String]) throws(FixtureError) -> Int {
        try request(["op": "delete", "attrs": attributes]) as? Int ?? -1
    }

    func reset() { _ = try? request(["op": "reset"]) }
}
