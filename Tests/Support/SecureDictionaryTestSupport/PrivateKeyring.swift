public import Foundation

/// The private gnome-keyring that `scripts/with-private-keyring` starts for the tests, and
/// the scripts that drive it.
///
/// ```swift
/// guard PrivateKeyring.enabled else { return }
/// try PrivateKeyring.daemon("lock")                       // scripts/keyring-daemon lock
/// let raw = try PrivateKeyring.fixture(["read", "--attr", "service=…"])
/// ```
public enum PrivateKeyring {
    static let environment = ProcessInfo.processInfo.environment
    /// A private keyring is running (never the user's own: tests lock, freeze and kill it).
    public static let available = environment["SD_PRIVATE_KEYRING"] == "1"
    /// Set by scripts/test in CI: a missing keyring fails the tests instead of skipping them.
    public static let required = environment["SD_REQUIRE_KEYRING"] == "1"
    public static let enabled = available || required
    /// The provider of the private keyring (`SD_TEST_PROVIDER`): gnome-keyring, kwallet or keepassxc.
    public static let provider = environment["SD_TEST_PROVIDER"] ?? "gnome-keyring"
    /// Whether the provider offers a collection under the `session` alias: gnome-keyring
    /// does (in memory); KWallet and KeePassXC offer `default` only.
    public static let hasSessionCollection = provider == "gnome-keyring"
    /// The reason printed when a test that needs a `session` collection is skipped.
    public static let noSessionCollection = "\(provider) has no 'session' collection (only gnome-keyring offers one)"
    /// A real GNOME unlock dialog (gcr-prompter on a virtual X server) answers the private
    /// gnome-keyring's prompts, for ``prompter(_:_:)`` to drive: `scripts/with-private-keyring
    /// --prompter` (`SD_TEST_PROMPTER=1`). Without it an unlock prompt shows nothing.
    public static let hasPrompter = environment["SD_TEST_PROMPTER"] == "1"
    /// xdg-desktop-portal with gnome-keyring's Secret backend runs on the private bus
    /// (`scripts/with-private-keyring --portal`, `SD_TEST_PORTAL=1`), for sandboxed test
    /// processes (``sandboxed(appID:talk:data:_:_:environment:)``).
    public static let hasPortal = environment["SD_TEST_PORTAL"] == "1"
    /// The repository: the folder above this file that holds Package.swift.
    public static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
            url.deleteLastPathComponent()
        }
        return url
    }()

    /// A program built next to the running test bundle (`swift test` builds the ones the
    /// test target depends on), or its bare name.
    public static func builtProduct(_ name: String) -> String {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for folder in [here, here.deletingLastPathComponent(), packageRoot.appendingPathComponent(".build/debug")] {
            let candidate = folder.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return name
    }

    /// `scripts/keyring-daemon COMMAND` (lock, unlock, restart, freeze, thaw…), with `extra`
    /// added to the environment (e.g. `SD_KEEPASSXC_CONFIRM_ACCESS` for a start).
    public static func daemon(_ command: String, environment extra: [String: String] = [:]) throws -> ChildProcess.Output {
        let environment = extra.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        return try ChildProcess.run(
            packageRoot.appendingPathComponent("scripts/keyring-daemon").path, [command], environment: environment)
    }

    /// `scripts/prompter COMMAND ARGUMENTS…`: drives the provider's dialog like a user
    /// (needs ``hasPrompter``). `wait-shown [SECONDS]` (its window id on stdout), `wait-gone
    /// [SECONDS]`, `visible` (status 0 or 1); gnome-keyring's unlock dialog: `type-password`,
    /// `type TEXT` (a wrong password), `cancel` (Escape); KeePassXC's access dialog:
    /// `keepassxc-allow`, `keepassxc-deny`; `screenshot FILE` (.png or XWD). Never
    /// `Prompt.Dismiss` a shown unlock prompt instead of `cancel`: it crashes
    /// gnome-keyring-daemon 42.1.
    ///
    /// ```swift
    /// guard PrivateKeyring.hasPrompter else { return }
    /// // … start the unlock in the background, then:
    /// #expect(try PrivateKeyring.prompter("wait-shown").succeeded)
    /// #expect(try PrivateKeyring.prompter("type-password").succeeded)
    /// ```
    public static func prompter(_ command: String, _ arguments: [String] = []) throws -> ChildProcess.Output {
        try ChildProcess.run(packageRoot.appendingPathComponent("scripts/prompter").path, [command] + arguments)
    }

    /// Runs `program` as the Flatpak app `appID` would run (`scripts/sandbox-run`): under
    /// bubblewrap with a `/.flatpak-info`, the bus only through a filtering proxy that lets
    /// it talk to the portals and to the names in `talk`, and `data` as its data folder
    /// (`XDG_DATA_HOME`). `environment` is added inside. Still running after `timeout`, the
    /// sandbox is killed (SIGKILL; the program inside dies with it).
    public static func sandboxed(
        appID: String, talk: [String] = [], data: String, _ program: String, _ arguments: [String],
        environment extra: [String: String] = [:], timeout: Duration = .seconds(300)
    ) throws -> ChildProcess.Output {
        let options = ["--app-id", appID, "--data", data] + talk.flatMap { ["--talk", $0] }
        let setting = extra.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try ChildProcess.run(
            packageRoot.appendingPathComponent("scripts/sandbox-run").path,
            options + ["--", "/usr/bin/env"] + setting + [program] + arguments, timeout: timeout)
    }

    /// Restarts the private KeePassXC (kill -9: what it did not save is lost) with its access
    /// confirmation on (`true`: it asks its user before a client reads an item the first
    /// time, its own default) or off; `onDisplay`: on the session's virtual X server (needs
    /// ``hasPrompter``), so that its access dialog is a window ``prompter(_:_:)`` answers
    /// (`keepassxc-allow`, `keepassxc-deny`). A clean stop could take 12 s once a client that
    /// still runs was refused access.
    public static func restartKeePassXC(confirmingAccess: Bool, onDisplay: Bool = false) throws -> [ChildProcess.Output] {
        let environment = [
            "SD_KEEPASSXC_CONFIRM_ACCESS": confirmingAccess ? "1" : "0", "SD_KEEPASSXC_DISPLAY": onDisplay ? "1" : "0",
        ]
        return [try daemon("restart", environment: environment)]
    }

    /// `scripts/keyring-fixture.py …`: raw access to items over D-Bus, bypassing
    /// SecureDictionary; `input` is passed as `--file`.
    public static func fixture(_ arguments: [String], input: Data? = nil) throws -> ChildProcess.Output {
        var arguments = arguments
        var file: URL?
        if let input {
            file = FileManager.default.temporaryDirectory.appendingPathComponent("sd-fixture-\(UUID().uuidString)")
            try input.write(to: file!)
            arguments += ["--file", file!.path]
        }
        defer { if let file { try? FileManager.default.removeItem(at: file) } }
        return try ChildProcess.run(
            "/usr/bin/python3", [packageRoot.appendingPathComponent("scripts/keyring-fixture.py").path] + arguments)
    }
}
