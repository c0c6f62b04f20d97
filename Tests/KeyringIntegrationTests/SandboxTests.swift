import Foundation
import SecureDictionaryTestSupport
import Testing

extension KeyringIntegration {
    /// The sandbox, for real: the test writer runs under bubblewrap, as a Flatpak app
    /// without `--talk-name=org.freedesktop.secrets` would: a `/.flatpak-info`, and no way to
    /// the Secret Service (here: no session bus at all inside the sandbox).
    @Suite struct Sandboxes {
        static let bwrap = ["/usr/bin/bwrap"].first { FileManager.default.isExecutableFile(atPath: $0) }

        func runInSandbox(flatpakInfo: String?) throws -> KeyringHarness.Output {
            let bwrap = try #require(Self.bwrap, "bubblewrap is not installed (scripts/install-system-deps installs it)")
            let writer = URL(fileURLWithPath: KeyringHarness.writer).resolvingSymlinksInPath()
            let info = FileManager.default.temporaryDirectory.appendingPathComponent("flatpak-info-\(UUID().uuidString)")
            try Data((flatpakInfo ?? "").utf8).write(to: info)
            defer { try? FileManager.default.removeItem(at: info) }
            var arguments = [
                "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--symlink", "usr/bin", "/bin", "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev",
                "--tmpfs", "/tmp", "--ro-bind", "/opt", "/opt",
                "--ro-bind", writer.deletingLastPathComponent().path, writer.deletingLastPathComponent().path,
            ]
            if flatpakInfo != nil { arguments += ["--ro-bind", info.path, "/.flatpak-info"] }
            arguments += ["--", writer.path, "probe", "org.example.Sandboxed", "settings", "1000"]
            return try KeyringHarness.run(bwrap, arguments)
        }

        @Test func insideAFlatpakTheErrorNamesTheMissingPermission() throws {
            let output = try runInSandbox(flatpakInfo: "[Application]\nname=org.example.Sandboxed\n")
            #expect(output.text.hasPrefix("error sandboxed"), "\(output.text) \(output.stderr)")
        }

        @Test func withoutAFlatpakInfoItIsAPlainServiceUnavailable() throws {
            let output = try runInSandbox(flatpakInfo: nil)
            #expect(output.text.hasPrefix("error serviceUnavailable"), "\(output.text) \(output.stderr)")
        }
    }
}
