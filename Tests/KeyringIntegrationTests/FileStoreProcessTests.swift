import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionaryFileStore

/// `EncryptedFileStore` in separate processes (`sd-test-writer`), with a
/// credential made by the real `systemd-creds encrypt --with-key=host` and handed over as
/// systemd hands it to a service (PID 1 is not systemd on these machines, so the unit is
/// simulated: the test decrypts the credential into a folder it names in
/// `$CREDENTIALS_DIRECTORY`, and sets `$STATE_DIRECTORY`), and with a passphrase typed on a
/// real pseudo-terminal (`script`) and kept in the real kernel keyring (checked with
/// `keyctl`). Needs no keyring; runs once, with gnome-keyring.
@Suite(
    .serialized,
    .enabled(if: !PrivateKeyring.available || PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct FileStoreProcesses {
    let base: String
    let app = "it.files.\(UUID().uuidString)"

    init() throws {
        base = try TemporaryFolder.create("sd-fsp")
    }

    /// A tool the tests need: in CI its absence is a failure, as everywhere
    /// (`scripts/install-system-deps` installs it).
    static func tool(_ name: String) throws -> String {
        let path = ["/usr/bin/\(name)", "/bin/\(name)", "/usr/sbin/\(name)"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        return try #require(path, "\(name) is not installed: run scripts/install-system-deps")
    }

    // MARK: Helpers

    /// Makes the encrypted credential `name` with `systemd-creds encrypt --with-key=host` from
    /// 32 random bytes, and hands it over as systemd would: decrypted by `systemd-creds
    /// decrypt` into `directory/name`. Returns the credential's bytes.
    @discardableResult
    func makeCredential(_ name: String = "securedictionary", in directory: String) throws -> [UInt8] {
        let creds = try Self.tool("systemd-creds")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var key = [UInt8](repeating: 0, count: 32)
        for index in key.indices { key[index] = UInt8.random(in: 0...255) }
        let encrypted = "\(base)/\(name)-\(UUID().uuidString).cred"
        let encrypt = try ChildProcess.run(
            creds, ["encrypt", "--with-key=host", "--name=\(name)", "-", encrypted], input: Data(key))
        try #require(encrypt.succeeded, "systemd-creds encrypt: \(encrypt)")
        let decrypt = try ChildProcess.run(creds, ["decrypt", "--name=\(name)", encrypted, "\(directory)/\(name)"])
        try #require(decrypt.succeeded, "systemd-creds decrypt: \(decrypt)")
        return key
    }

    /// sd-test-writer with `environment` added (and this test's folders).
    func writer(
        _ arguments: [String], _ environment: [String: String], input: Data = Data(), timeout: Duration = .seconds(120)
    ) throws -> ChildProcess.Output {
        let merged = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        return try ChildProcess.run(KeyringHarness.writer, arguments, input: input, environment: merged, timeout: timeout)
    }

    /// Ten writers of the dictionary "killed" in `environment`'s store, each writing 400 keys
    /// and killed (SIGKILL) when its time is up: 100 ms, 40 ms more each round, so that most
    /// die while writing. `afterEach(round)` runs after each. Returns how many were killed.
    func killWriters(_ environment: [String: String], afterEach: (Int) throws -> Void = { _ in }) throws -> Int {
        var killed = 0
        for round in 0..<10 {
            let output = try writer(
                ["write", app, "killed", "r\(round)", "400", "0"], environment, timeout: .milliseconds(100 + 40 * round))
            if output.timedOut { killed += 1 }
            try afterEach(round)
        }
        return killed
    }

    func credentialEnvironment(_ directory: String) -> [String: String] {
        ["SD_TEST_WRITER_STORE": "credential", "CREDENTIALS_DIRECTORY": directory, "STATE_DIRECTORY": "\(base)/state"]
    }

    /// A passphrase store in `base/files`, reading its passphrase on standard input.
    func passphraseEnvironment(cacheSeconds: String = "60") -> [String: String] {
        [
            "SD_TEST_WRITER_STORE": "passphrase", "SD_TEST_WRITER_FOLDER": "\(base)/files", "SD_TEST_WRITER_PASSPHRASE_FD": "0",
            "SD_TEST_WRITER_CACHE_SECONDS": cacheSeconds, "SD_TEST_WRITER_SCRYPT_LOG2N": "12",
        ]
    }

    /// The only item file of `folder`.
    func itemFile(in folder: String) throws -> String {
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".sdict") }
        try #require(files.count == 1, "\(files)")
        return "\(folder)/\(files[0])"
    }

    /// The kernel keyring's description of the passphrase kept for the files in `folder`
    /// (one salt for all of them).
    func cachedPassphraseDescription(in folder: String) throws -> String {
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder).first { $0.hasSuffix(".sdict") })
        let header = try EncryptedItemFile.header(of: Array(Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(name)"))))
        return PassphraseKeySource.cacheDescription(try #require(header.key?.scrypt))
    }

    /// Whether `keyctl search @s user DESCRIPTION` finds the key (the real tool).
    func keyctlFinds(_ description: String) throws -> Bool {
        try ChildProcess.run(try Self.tool("keyctl"), ["search", "@s", "user", description]).succeeded
    }

    // MARK: A systemd credential

    @Test func aServiceKeepsItsDictionaryUnderARealSystemdCredential() throws {
        let credentials = "\(base)/credentials"
        let key = try makeCredential(in: credentials)
        let environment = credentialEnvironment(credentials)
        #expect(try writer(["set", app, "tokens", "token", "canary-5be1"], environment).trimmedText.hasPrefix("ok "))
        #expect(try writer(["get", app, "tokens", "token"], environment).trimmedText == "ok canary-5be1")
        // In $STATE_DIRECTORY, encrypted: neither the value nor the key in clear.
        let file = try Data(contentsOf: URL(fileURLWithPath: try itemFile(in: "\(base)/state/securedictionary")))
        #expect(file.range(of: Data("canary-5be1".utf8)) == nil)
        #expect(file.range(of: Data(key)) == nil)
    }

    @Test func anotherCredentialIsWrongKey() throws {
        try makeCredential(in: "\(base)/first")
        try makeCredential(in: "\(base)/second")
        #expect(try writer(["set", app, "tokens", "token", "v"], credentialEnvironment("\(base)/first")).succeeded)
        let read = try writer(["get", app, "tokens", "token"], credentialEnvironment("\(base)/second"))
        #expect(read.trimmedText == "error wrongKey", "\(read)")
    }

    @Test func aMissingCredentialIsATypedErrorThatNamesIt() throws {
        let empty = "\(base)/empty"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        var environment = credentialEnvironment(empty)
        environment["SD_TEST_WRITER_CREDENTIAL"] = "app-token-key"
        let write = try writer(["set", app, "tokens", "token", "v"], environment)
        #expect(!write.succeeded)
        #expect(
            write.stderr.contains("'app-token-key'") && write.stderr.contains("LoadCredentialEncrypted=app-token-key"), "\(write)"
        )
        #expect(try writer(["get", app, "tokens", "token"], environment).trimmedText == "absent")  // nothing written
        environment["CREDENTIALS_DIRECTORY"] = nil
        // No file yet: no key needed to say so.
        #expect(try writer(["probe", app, "tokens", "1000"], environment).trimmedText.hasPrefix("ok 0"))
        #expect(
            try writer(["set", app, "tokens", "token", "v"], environment).stderr.contains("$CREDENTIALS_DIRECTORY is not set"))
    }

    @Test func processesLoseNothingUnderACredential() async throws {
        try makeCredential(in: "\(base)/credentials")
        try await expectNoLostWrites(credentialEnvironment("\(base)/credentials"), input: Data())
    }

    @Test func processesLoseNothingUnderAPassphrase() async throws {
        // The first write picks the salt; then each process reads the passphrase once.
        #expect(
            try writer(
                ["set", app, "counter-app", "start", "1"], passphraseEnvironment(cacheSeconds: "none"), input: Data("pw\n".utf8)
            ).succeeded)
        try await expectNoLostWrites(
            passphraseEnvironment(cacheSeconds: "none"), input: Data("pw\n".utf8), name: "counter-app", extra: 1)
    }

    /// 4 processes × 40 keys and 10 counter increments each, as the Secret portal store proves.
    private func expectNoLostWrites(
        _ environment: [String: String], input: Data, name: String = "counter", extra: Int = 0
    ) async throws {
        let (writers, count, increments) = (4, 40, 10)
        let outputs = try await withThrowingTaskGroup(of: ChildProcess.Output.self) { group in
            for index in 0..<writers {
                group.addTask {
                    try writer(["write", app, name, "p\(index)", "\(count)", "\(increments)"], environment, input: input)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for output in outputs { #expect(output.trimmedText == "ok \(increments)", "\(output)") }
        let probe = try writer(["probe", app, name, "3000"], environment, input: input)
        // Each writer leaves count − count/10 keys (every tenth is removed again), plus the counter.
        #expect(probe.trimmedText == "ok \(writers * (count - count / 10) + 1 + extra)", "\(probe)")
    }

    /// Atomic replacement: a writer killed (SIGKILL) at any moment leaves the old file or the
    /// new one, never a torn one, and never a lock that blocks the next writer.
    @Test func aWriterKilledMidWriteLeavesAWholeFile() throws {
        let environment = credentialEnvironment("\(base)/credentials")
        try makeCredential(in: "\(base)/credentials")
        let killed = try killWriters(environment) { round in
            let probe = try writer(["probe", app, "killed", "3000"], environment)
            #expect(probe.trimmedText.hasPrefix("ok "), "round \(round): \(probe)")
        }
        #expect(killed >= 5, "only \(killed) of 10 writers were killed while writing: make them write longer")
        #expect(try writer(["set", app, "killed", "after", "kills"], environment).trimmedText.hasPrefix("ok "))
    }

    @Test func tamperedTruncatedSwappedAndOtherKeyFilesAreTypedErrors() throws {
        let environment = credentialEnvironment("\(base)/credentials")
        try makeCredential(in: "\(base)/credentials")
        #expect(try writer(["set", app, "a", "k", "v"], environment).succeeded)
        #expect(try writer(["set", app, "b", "k", "v"], environment).succeeded)
        let folder = "\(base)/state/securedictionary"
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".sdict") }
        try #require(names.count == 2)
        let file = try itemFilePath(named: "a", in: folder)
        let good = try Data(contentsOf: URL(fileURLWithPath: file))
        func outcome(after bytes: Data) throws -> String {
            try bytes.write(to: URL(fileURLWithPath: file))
            return try writer(["get", app, "a", "k"], environment).trimmedText
        }
        var tampered = good
        tampered[tampered.count - 20] ^= 1
        #expect(try outcome(after: tampered) == "error corrupt")
        #expect(try outcome(after: good.prefix(good.count - 17)) == "error corrupt")
        #expect(
            try outcome(after: Data(contentsOf: URL(fileURLWithPath: try itemFilePath(named: "b", in: folder))))
                == "error corrupt")
        try makeCredential(in: "\(base)/other")
        try good.write(to: URL(fileURLWithPath: file))
        #expect(try writer(["get", app, "a", "k"], credentialEnvironment("\(base)/other")).trimmedText == "error wrongKey")
    }

    private func itemFilePath(named name: String, in folder: String) throws -> String {
        ItemFileFolder(path: folder).filePath(of: try KeyringItem(dictionaryName: name, applicationID: app))
    }

    /// Rollback across processes: the generation recorded in the session's kernel keyring by
    /// the writer is seen by the next process.
    @Test func anOldCopyPutBackIsRefusedByTheNextProcessOfTheSession() throws {
        let environment = credentialEnvironment("\(base)/credentials")
        try makeCredential(in: "\(base)/credentials")
        #expect(try writer(["set", app, "tokens", "token", "old"], environment).succeeded)
        let file = try itemFile(in: "\(base)/state/securedictionary")
        let oldCopy = try Data(contentsOf: URL(fileURLWithPath: file))
        #expect(try writer(["set", app, "tokens", "token", "new"], environment).succeeded)
        try oldCopy.write(to: URL(fileURLWithPath: file))
        #expect(try writer(["get", app, "tokens", "token"], environment).trimmedText == "error rolledBack")
        let write = try writer(["set", app, "tokens", "other", "x"], environment)
        #expect(!write.succeeded && write.stderr.contains("older than a copy"), "\(write)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == oldCopy)
    }

    // MARK: A passphrase

    /// Typed on a real pseudo-terminal (echo off, asked twice for a new folder), kept in the
    /// kernel keyring: the next process, which has no passphrase to give, does not ask.
    /// Then `forget` revokes it, and the next process must ask.
    @Test func aPassphraseTypedOnATerminalIsAskedOnceForTheSession() throws {
        var environment = passphraseEnvironment()
        environment["SD_TEST_WRITER_PASSPHRASE_FD"] = nil  // the terminal
        let typed = "typed-\(UUID().uuidString.prefix(8))"
        let first = try TerminalSession.run(
            [KeyringHarness.writer, "set", app, "tokens", "token", "kept"], environment: environment,
            answers: [("New passphrase", typed), ("same passphrase again", typed)])
        #expect(first.output.contains("ok "), "\(first.output)")
        #expect(!first.output.contains(typed), "the passphrase was echoed")
        let description = try cachedPassphraseDescription(in: "\(base)/files")
        #expect(try keyctlFinds(description), "no \(description) in the session keyring")
        let second = try writer(["get", app, "tokens", "token"], passphraseEnvironment())  // stdin empty: cannot answer
        #expect(second.trimmedText == "ok kept", "\(second)")
        #expect(try writer(["forget"], passphraseEnvironment()).trimmedText == "ok")
        #expect(try !keyctlFinds(description), "forget left it in the kernel keyring")
        #expect(
            try writer(["get", app, "tokens", "token"], passphraseEnvironment()).trimmedText == "error passphraseUnavailable")
        // A wrong passphrase typed on the terminal is a typed error, and is not kept.
        var asking = environment
        asking["SD_TEST_WRITER_CACHE_SECONDS"] = "60"
        let wrong = try TerminalSession.run(
            [KeyringHarness.writer, "get", app, "tokens", "token"], environment: asking, answers: [("Passphrase for", "not-it")])
        #expect(wrong.output.contains("error wrongPassphrase"), "\(wrong.output)")
        #expect(try !keyctlFinds(description))
        let right = try TerminalSession.run(
            [KeyringHarness.writer, "get", app, "tokens", "token"], environment: asking, answers: [("Passphrase for", typed)])
        #expect(right.output.contains("ok kept"), "\(right.output)")
    }

    @Test func theKernelKeyringCopyExpiresAfterItsTimeout() throws {
        let environment = passphraseEnvironment(cacheSeconds: "2")
        #expect(try writer(["set", app, "tokens", "token", "v"], environment, input: Data("pw\n".utf8)).succeeded)
        let description = try cachedPassphraseDescription(in: "\(base)/files")
        #expect(try writer(["get", app, "tokens", "token"], environment).trimmedText == "ok v")  // not asked
        Thread.sleep(forTimeInterval: 3)
        #expect(try !keyctlFinds(description))
        #expect(try writer(["get", app, "tokens", "token"], environment).trimmedText == "error passphraseUnavailable")
        #expect(try writer(["get", app, "tokens", "token"], environment, input: Data("pw\n".utf8)).trimmedText == "ok v")
    }

    @Test func aChangedPassphraseReencryptsAndTheOldOneNoLongerOpens() throws {
        let environment = passphraseEnvironment()
        #expect(try writer(["set", app, "a", "token", "first"], environment, input: Data("old-pw\n".utf8)).succeeded)
        #expect(try writer(["set", app, "b", "token", "second"], environment, input: Data("old-pw\n".utf8)).succeeded)
        let oldDescription = try cachedPassphraseDescription(in: "\(base)/files").description
        // The old one is kept: forget it, so that the change must ask for it.
        #expect(try writer(["forget"], environment).succeeded)
        let change = try writer(["change-passphrase"], environment, input: Data("old-pw\nnew-pw\n".utf8))
        #expect(change.trimmedText == "ok 2", "\(change)")
        #expect(try !keyctlFinds(oldDescription))
        #expect(try writer(["forget"], environment).succeeded)
        #expect(
            try writer(["get", app, "a", "token"], environment, input: Data("old-pw\n".utf8)).trimmedText
                == "error wrongPassphrase")
        #expect(try writer(["get", app, "a", "token"], environment, input: Data("new-pw\n".utf8)).trimmedText == "ok first")
        #expect(try writer(["get", app, "b", "token"], environment).trimmedText == "ok second")  // kept for the session now
    }

    // MARK: The automatic choice without a keyring

    /// No session bus at all (`DBUS_SESSION_BUS_ADDRESS` unset, no `$XDG_RUNTIME_DIR/bus`):
    /// the configured file store, or `noStoreAvailable`, in milliseconds.
    @Test func withoutASessionBusTheAutomaticChoiceIsTheConfiguredFileStoreOrATypedError() throws {
        try makeCredential(in: "\(base)/credentials")
        var environment = credentialEnvironment("\(base)/credentials")
        environment["SD_TEST_WRITER_STORE"] = "automatic"
        environment["XDG_RUNTIME_DIR"] = base  // no bus socket there
        environment["DBUS_SESSION_BUS_ADDRESS"] = nil
        var merged = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        merged["DBUS_SESSION_BUS_ADDRESS"] = nil
        merged["DISPLAY"] = nil
        let none = try ChildProcess.run(KeyringHarness.writer, ["choice"], environment: merged)
        #expect(none.trimmedText.hasPrefix("error noStoreAvailable "), "\(none)")
        merged["SD_TEST_WRITER_FILE_STORE"] = "credential"
        let files = try ChildProcess.run(KeyringHarness.writer, ["choice"], environment: merged)
        #expect(files.trimmedText.hasPrefix("ok encryptedFiles "), "\(files)")
        for output in [none, files] {
            let milliseconds = Int(output.trimmedText.split(separator: " ").last ?? "") ?? .max
            #expect(milliseconds < 500, "\(output)")
        }
        let write = try ChildProcess.run(KeyringHarness.writer, ["set", app, "tokens", "token", "v"], environment: merged)
        #expect(write.succeeded, "\(write)")
        #expect(try writer(["get", app, "tokens", "token"], credentialEnvironment("\(base)/credentials")).trimmedText == "ok v")
    }

    /// A session bus with nothing on it (`scripts/with-private-keyring --no-keyring`: no
    /// provider, no D-Bus activation).
    @Test func onAnEmptyBusTheAutomaticChoiceIsTheConfiguredFileStoreOrATypedError() throws {
        try makeCredential(in: "\(base)/credentials")
        let script = PrivateKeyring.packageRoot.appendingPathComponent("scripts/with-private-keyring").path
        var environment = ProcessInfo.processInfo.environment.merging(credentialEnvironment("\(base)/credentials")) { _, new in
            new
        }
        environment["SD_TEST_WRITER_STORE"] = "automatic"
        let none = try ChildProcess.run(
            script, ["--no-keyring", "--", KeyringHarness.writer, "choice"], environment: environment)
        #expect(none.trimmedText.hasPrefix("error noStoreAvailable "), "\(none)")
        environment["SD_TEST_WRITER_FILE_STORE"] = "credential"
        let files = try ChildProcess.run(
            script, ["--no-keyring", "--", KeyringHarness.writer, "choice"], environment: environment)
        #expect(files.trimmedText.hasPrefix("ok encryptedFiles "), "\(files)")
        // A first choice of the files waits half the deadline for a keyring that may be
        // starting; a later one is quick (AutomaticChoice tests both).
        let milliseconds = Int(none.trimmedText.split(separator: " ").last ?? "") ?? .max
        #expect(milliseconds < 500, "\(none)")
    }
}

/// A program run on a real pseudo-terminal (`script -q -e -c`), answered like a person: each
/// answer is typed once its prompt appeared (typing earlier would be flushed when the
/// program turns echo off).
enum TerminalSession {
    struct Result {
        var output: String
        var status: Int32
    }

    static func run(
        _ command: [String], environment: [String: String], answers: [(prompt: String, text: String)],
        timeout: Duration = .seconds(60)
    ) throws -> Result {
        let script = try FileStoreProcesses.tool("script")
        let line = command.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let process = try LiveChild(
            script, ["-q", "-e", "-c", line, "/dev/null"], environment: environment.mapValues { $0.isEmpty ? nil : $0 })
        let start = ContinuousClock.now
        var consumed = 0  // characters of output already matched to a prompt
        for answer in answers {
            while ContinuousClock.now - start < timeout && !process.hasExited {
                let text = String(decoding: process.transcript, as: UTF8.self)
                let rest = text.dropFirst(consumed)
                if let found = rest.range(of: answer.prompt) {
                    consumed += rest.distance(from: rest.startIndex, to: found.upperBound)
                    break
                }
                usleep(20_000)
            }
            usleep(100_000)  // the program turns echo off right after its prompt
            try? process.send(answer.text)
        }
        while !process.hasExited && ContinuousClock.now - start < timeout { usleep(20_000) }
        let output = process.finish(timeout: .zero)
        return Result(output: output.text + output.stderr, status: output.status)
    }
}
