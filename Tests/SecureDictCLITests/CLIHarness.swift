import Foundation
import SecureDictionaryTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the built `secure-dict` against the private gnome-keyring of `scripts/with-private-keyring`:
/// a thin layer over SecureDictionaryTestSupport that records failures as test issues.
enum CLIHarness {
    typealias Output = ChildProcess.Output

    static let available = PrivateKeyring.available
    static let enabled = PrivateKeyring.enabled

    /// The built `secure-dict`, next to the test bundle (the test target depends on it).
    static let binary = PrivateKeyring.builtProduct("secure-dict")

    /// Runs `secure-dict ARGUMENTS`; standard input is `input`, or empty (never a terminal).
    /// A run that outlasts `timeout` is killed (`Output.timedOut`).
    @discardableResult
    static func cli(
        _ arguments: [String], input: Data? = nil, environment extra: [String: String] = [:],
        timeout: Duration = .seconds(300)
    ) throws -> Output {
        var environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        environment.removeValue(forKey: "SECURE_DICT_APP")
        if let app = extra["SECURE_DICT_APP"] { environment["SECURE_DICT_APP"] = app }
        return try ChildProcess.run(binary, arguments, input: input ?? Data(), environment: environment, timeout: timeout)
    }

    /// Runs a program to completion, feeding it `input` and collecting its output.
    static func run(_ program: String, _ arguments: [String], input: Data = Data(), environment: [String: String]? = nil) throws
        -> Output
    {
        try ChildProcess.run(program, arguments, input: input, environment: environment)
    }

    /// `scripts/keyring-daemon COMMAND` (lock, unlock, freeze, thaw…); records a failure.
    static func daemon(_ command: String) throws {
        let output = try PrivateKeyring.daemon(command)
        #expect(output.status == 0, "keyring-daemon \(command): \(output.stderr)")
    }

    /// `scripts/keyring-fixture.py …`: raw access to items, bypassing SecureDictionary.
    static func fixture(_ arguments: [String], input: Data? = nil) throws -> Output {
        try PrivateKeyring.fixture(arguments, input: input)
    }
}

/// A fresh application ID per test, so tests never see each other's items.
struct TestApp {
    let id = "cli.\(UUID().uuidString)"

    /// Runs `secure-dict COMMAND --app ID ARGUMENTS`.
    @discardableResult
    func cli(_ command: String, _ arguments: String..., input: Data? = nil) throws -> CLIHarness.Output {
        try CLIHarness.cli([command, "--app", id] + arguments, input: input)
    }

    /// The attributes of one of this app's items, as the stored-item contract defines them.
    func attributes(name: String?) -> [String] {
        let item = "\(id).__SecureDictionary__" + (name.map { ".\($0)" } ?? "")
        return [
            "--attr", "service=\(item)", "--attr", "application=\(id)",
            "--attr", "dictionary=\(name ?? "")", "--attr", "xdg:schema=io.github.securedictionary.Dictionary",
        ]
    }

    /// The raw secret of one of this app's items, read over D-Bus without SecureDictionary.
    func storedBytes(name: String?) throws -> Data {
        let output = try CLIHarness.fixture(["read"] + attributes(name: name))
        #expect(output.status == 0, "fixture read: \(output.stderr)")
        return output.stdout
    }

    /// Plants raw bytes as the secret of one of this app's items.
    func plant(_ bytes: Data, name: String?) throws {
        let item = "\(id).__SecureDictionary__" + (name.map { ".\($0)" } ?? "")
        let output = try CLIHarness.fixture(["plant", "--label", item] + attributes(name: name), input: bytes)
        #expect(output.status == 0, "fixture plant: \(output.stderr)")
    }
}

/// `dbus-monitor` on the private session bus, watching the Secret Service's `CreateItem`
/// calls (every SecureDictionary write is one), to count keyring writes.
final class BusMonitor {
    private let monitor: LiveChild

    /// Watches the calls named `members` (by default the writes).
    init(members: [String] = ["CreateItem", "SetSecret"]) throws {
        monitor = try LiveChild(
            "/usr/bin/dbus-monitor", ["--session"] + members.map { "type='method_call',member='\($0)'" })
        // Monitoring has begun once the bus took the monitor's name away again.
        try wait(for: "member=NameLost")
    }

    deinit {
        // SIGKILL: a child of a test thread inherits its blocked signals, SIGTERM among them.
        monitor.kill(SIGKILL)
        monitor.finish()
    }

    var text: String { String(decoding: monitor.transcript, as: UTF8.self) }

    /// Waits (up to 10 s) until `needle` appears in the output.
    func wait(for needle: String) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !text.contains(needle) {
            guard ContinuousClock.now < deadline else {
                Issue.record("dbus-monitor never showed \(needle)")
                return
            }
            usleep(20_000)
        }
    }

    /// The `CreateItem` calls seen so far whose attributes hold this exact item name.
    func writes(ofItem item: String) -> Int {
        text.components(separatedBy: "\nmethod call ").filter { call in
            call.contains("member=CreateItem") && call.contains("\"\(item)\"")
        }.count
    }

    /// The calls seen so far, in order: each one's member name, or "CreateItem ITEM" for a
    /// write whose attributes name an item of the test's application.
    func calls(namingItemsOf applicationID: String) -> [String] {
        text.components(separatedBy: "\nmethod call ").compactMap { call in
            guard let member = call.split(separator: "member=").dropFirst().first?.prefix(while: { $0 != "\n" }) else {
                return nil
            }
            let prefix = "\"\(applicationID).__SecureDictionary__"
            guard member == "CreateItem", let start = call.range(of: prefix) else { return String(member) }
            let name = call[start.lowerBound...].dropFirst().prefix(while: { $0 != "\"" })
            return "CreateItem \(name)"
        }
    }

    /// How many `Item.SetSecret` calls went out (KeePassXC's writes to an existing item). They
    /// name only the item's path: count them where one item alone already exists.
    var secretReplacements: Int {
        text.components(separatedBy: "\nmethod call ").filter { $0.contains("member=SetSecret") }.count
    }
}
