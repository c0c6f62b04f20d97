import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionaryFileStore

/// The encrypted-file stores' holes across processes: the kernel keyring's quota as a user
/// who is not root (uid 65534, in a session keyring of its own, as after a login), and the
/// temporaries of writers killed mid-write.
extension FileStoreProcesses {
    /// A folder of uid 65534 (mode 0700) directly under /tmp, holding a 32-byte credential in
    /// `credentials/`.
    func nobodysFolder() throws -> String {
        let home = "/tmp/sd-nobody-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: "\(home)/credentials", withIntermediateDirectories: true)
        var key = Data(count: 32)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        try key.write(to: URL(fileURLWithPath: "\(home)/credentials/securedictionary"))
        for path in [home, "\(home)/credentials", "\(home)/credentials/securedictionary"] {
            chown(path, 65534, 65534)
            chmod(path, path.hasSuffix("securedictionary") ? 0o400 : 0o700)
        }
        return home
    }

    /// Runs the bash `script` as uid 65534 in a new session keyring of its own (`keyctl
    /// session -`), with sd-test-writer's credential store in `home`.
    func asNobody(_ script: String, home: String) throws -> ChildProcess.Output {
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home
        environment["SD_TEST_WRITER_STORE"] = "credential"
        environment["CREDENTIALS_DIRECTORY"] = "\(home)/credentials"
        environment["SD_TEST_WRITER_FOLDER"] = "\(home)/files"
        environment["STATE_DIRECTORY"] = nil
        // One such script at a time on this machine (flock): the key quota is the user's, and
        // .ci/run runs Debian 12's and Debian 13's suites at once.
        let arguments = [
            "/tmp/securedictionary-uid-65534.lock", try Self.tool("setpriv"), "--reuid=65534", "--regid=65534",
            "--clear-groups", "--", try Self.tool("keyctl"), "session", "-", "/bin/bash",
            "-c", "set -u\nw=\(KeyringHarness.writer)\n" + script,
        ]
        return try ChildProcess.run(try Self.tool("flock"), arguments, environment: environment, timeout: .seconds(600))
    }

    /// Before: one kernel key per file ever written, so that after about 200
    /// files the quota of a user who is not root (200 keys, 20,000 bytes) was full, every
    /// other program of the user failed to add a key, and the next files had no record: an
    /// old copy put back was read without error.
    @Test(.enabled(if: getuid() == 0, "needs root to run as uid 65534"))
    func aUserWithManyDictionariesKeepsFewKernelKeysAndRollbackIsStillRefused() throws {
        let home = try nobodysFolder()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let last = ItemFileFolder(path: "\(home)/files/f0").filePath(
            of: try KeyringItem(dictionaryName: "last", applicationID: app))
        let output = try asNobody(
            """
            $w spread \(app) 240 12 || exit 1
            echo "session-keys $(keyctl rlist @s | wc -w)"
            export SD_TEST_WRITER_FOLDER=\(home)/files/f0
            $w set \(app) last k old >/dev/null || exit 1
            cp \(last) \(home)/old
            $w set \(app) last k new >/dev/null || exit 1
            cp \(home)/old \(last)
            $w get \(app) last k
            """, home: home)
        #expect(output.status == 0, "\(output)")
        let keys = output.text.split(separator: "\n").first { $0.hasPrefix("session-keys ") }.flatMap {
            Int($0.split(separator: " ")[1])
        }
        #expect((keys ?? .max) <= 8, "\(output)")
        #expect(output.text.contains("error rolledBack"), "\(output)")
    }

    /// A quota filled by another program is reported, never a silent loss of the
    /// protection. Before: the write said nothing, and the next process read an old copy.
    @Test(.enabled(if: getuid() == 0, "needs root to run as uid 65534"))
    func aFullKernelKeyQuotaIsReported() throws {
        let home = try nobodysFolder()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let output = try asNobody(
            """
            n=0  # until the keys of the tests before are collected: the quota has room
            until keyctl add user sd-room x @s >/dev/null 2>&1 || [ $n -ge 200 ]; do n=$((n+1)); sleep 0.05; done
            i=0
            while [ $i -lt 400 ] && keyctl add user sd-filler-$i x @s >/dev/null 2>&1; do i=$((i+1)); done
            echo "filled $i"
            $w set \(app) tokens k v || exit 1
            $w diagnose
            """, home: home)
        #expect(output.status == 0, "\(output)")
        #expect(output.stderr.contains("quota"), "the write did not report the full quota: \(output)")
        let diagnosis = output.text.split(separator: "\n").first { $0.hasPrefix("diagnosis ") } ?? ""
        #expect(diagnosis.contains("kernel key quota is full"), "\(output)")
    }

    /// Before: every writer killed while writing left its `.NAME.RANDOM.tmp`
    /// in the folder, and nothing removed it.
    @Test func theNextWriteRemovesWhatKilledWritersLeft() throws {
        let environment = credentialEnvironment("\(base)/credentials")
        try makeCredential(in: "\(base)/credentials")
        let killed = try killWriters(environment)
        let folder = "\(base)/state/securedictionary"
        let before = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".tmp") }
        #expect(try writer(["set", app, "killed", "after", "kills"], environment).trimmedText.hasPrefix("ok "))
        let after = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".tmp") }
        #expect(after.isEmpty, "\(after.count) temporaries left (\(before.count) before the write, \(killed) writers killed)")
    }
}
