import Foundation
import SecureDictionaryTestSupport
import Testing

/// The README's first command, `scripts/run-example`, installs what the example needs and
/// none of the test lab (issue 36): run with stand-ins for `dpkg-query` (every package
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
