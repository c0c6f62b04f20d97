import Foundation
import SecureDictionaryTestSupport
import Testing

/// The README's first command, `scripts/run-example`, installs what the example needs and
/// none of the test lab: run with stand-ins for `dpkg-query` (every package
/// missing), `apt-get` (records what it is asked to install) and `swift` (stops the script
/// there), it asks apt for exactly the example's packages. No keyring: in the suite
/// scripts/provider-matrix knows as provider-independent.
extension SecureDictUsage {
    @Test func theExampleCommandInstallsNoneOfTheTestLab() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sd-example-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let asked = folder.appendingPathComponent("apt-get.log").path
        let standIns = [
            "dpkg-query": "exit 1",  // nothing is installed
            "apt-get": "echo \"$*\" >>'\(asked)'",
            "sudo": "exec \"$@\"",
            "swift": "echo 'swift: stand-in' >&2; exit 97",
        ]
        for (name, body) in standIns {
            let path = folder.appendingPathComponent(name).path
            try "#!/bin/sh\n\(body)\n".write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        }
        let script = PrivateKeyring.packageRoot.appendingPathComponent("scripts/run-example").path
        let path = folder.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let run = try ChildProcess.run(script, [], environment: ["PATH": path, "HOME": folder.path])
        #expect(run.status == 97, "\(run)")  // it went on to the build

        let log = (try? String(contentsOfFile: asked, encoding: .utf8)) ?? ""
        let install = log.split(separator: "\n").first { $0.contains("install") }.map(String.init) ?? ""
        let packages = Set(install.split(separator: " ").map(String.init).filter { !$0.hasPrefix("-") && $0 != "install" })
        #expect(packages == ["libsecret-1-dev", "pkg-config", "gnome-keyring", "dbus", "libglib2.0-bin"], "\(log)")
    }
}

/// The README's sample output of `scripts/run-example` is what the example prints (it once
/// was not): the example, run twice against this keyring, prints the sample's lines, the
/// date aside, and the sample's first line is the one `scripts/run-example` prints without a
/// keyring in the session.
extension SecureDictCLI {
    @Test func theREADMEsSampleOutputIsWhatTheExamplePrints() throws {
        let root = PrivateKeyring.packageRoot
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "```\n$ scripts/run-example\n"))
        let block = readme[start.lowerBound...].dropFirst(4).prefix { $0 != "`" }
        let runs = block.components(separatedBy: "$ scripts/run-example\n").dropFirst().map {
            $0.split(separator: "\n").map(String.init)
        }
        try #require(runs.count == 2, "\(block)")

        let script = try String(contentsOf: root.appendingPathComponent("scripts/run-example"), encoding: .utf8)
        let privateKeyring = "No Secret Service in this session: using a private keyring kept in "
        #expect(script.contains("echo \"\(privateKeyring)$keep.\""))
        let example = PrivateKeyring.builtProduct("remember-token")
        #expect(try CLIHarness.run(example, ["--reset"]).status == 0)
        for (number, run) in runs.enumerated() {
            #expect(run.first?.hasPrefix(privateKeyring) == true, "run \(number + 1): \(run)")
            let printed = try CLIHarness.run(example, [])
            #expect(printed.status == 0, "\(printed)")
            let lines = printed.text.split(separator: "\n").map(String.init)
            #expect(lines.map(Self.undated) == run.dropFirst().map(Self.undated), "run \(number + 1)")
        }
        #expect(try CLIHarness.run(example, ["--reset"]).status == 0)
    }

    /// The line without what depends on the day: "stored on DATE (".
    private static func undated(_ line: String) -> String {
        guard let on = line.range(of: "stored on "), let end = line.range(of: " (", range: on.upperBound..<line.endIndex) else {
            return line
        }
        return line.replacingCharacters(in: on.upperBound..<end.lowerBound, with: "DATE")
    }
}
