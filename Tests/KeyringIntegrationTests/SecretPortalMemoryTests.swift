import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration.SecretPortal {
    /// `SecureDictionary.hardenProcess()` (no core dumps, not dumpable) keeps the
    /// Secret portal working. A hardened KeePassXC snap broke xdg-desktop-portal, which reads
    /// its caller's `/proc/PID/…`; a Flatpak app talks to the portal through its bus proxy
    /// (here `scripts/sandbox-run`'s), whose entries the portal reads, in a user namespace the
    /// portal's user owns: the app's own hardening does not get in the way (Debian 12's
    /// xdg-desktop-portal 1.16 and Debian 13's 1.20 alike).
    @Test func aHardenedAppKeepsUsingThePortal() throws {
        let test = TestItem("hardened")
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("sd-app-\(UUID().uuidString)").path
        func app(_ arguments: [String]) throws -> ChildProcess.Output {
            try PrivateKeyring.sandboxed(
                appID: Self.appA, data: data, KeyringHarness.writer, arguments,
                environment: ["SD_TEST_WRITER_STORE": "portal", "SD_TEST_WRITER_HARDEN": "1"])
        }
        let set = try app(["set", test.appID, test.name, "token", "v1"])
        #expect(set.trimmedText.hasPrefix("ok "), "\(set)")
        #expect(set.stderr.contains("hardened: core dumps off, not attachable"), "\(set.stderr)")
        let get = try app(["get", test.appID, test.name, "token"])
        #expect(get.trimmedText == "ok v1", "\(get)")
    }
}

extension MemoryScan {
    /// The Secret portal's files under the core scan (loaded, released, and the control), in
    /// a sandboxed app whose dictionaries another process of the app planted: the store
    /// contract's memory clause for `.portalFiles`.
    func scanThePortalStore() throws {
        let appID = KeyringIntegration.SecretPortal.appA
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("sd-app-\(UUID().uuidString)").path
        // --network shares the host's pid namespace: the pid the scanned process prints is the scan's.
        let sandbox = [
            PrivateKeyring.packageRoot.appendingPathComponent("scripts/sandbox-run").path, "--app-id", appID, "--data", data,
            "--network", "--", "/usr/bin/env", "SD_TEST_WRITER_STORE=portal",
        ]
        let plant = { (files: [String]) throws in
            let output = try ChildProcess.run(
                sandbox[0], Array(sandbox.dropFirst()) + [KeyringHarness.writer, "plant", app] + files)
            try #require(output.trimmedText == "ok \(files.count)", "plant: \(output)")
        }
        let scans = try ["control", "loaded", "released"].map { mode in
            try (mode, scan(mode: mode, wrapper: sandbox, plant: plant))
        }
        try expectNoCanaries(scans)
    }
}
