import Crypto
import Foundation
import SecureDictionary
import SecureDictionaryFileStore
import SecureDictionaryTestSupport

/// Scenario 13: the encrypted-file stores against the holes an adversarial run found, each across
/// processes (`sd-reliability worker files …`): an old copy put back and read through other
/// spellings of its folder; a user who is not root (uid 65534 when run as root) writing many
/// dictionaries, and one whose kernel key quota another program filled; a planted scrypt cost;
/// a file's key in a core of this release build.
enum FileStores {
    static func run(_ harness: Harness, _ report: Report) {
        spellings(harness, report)
        quota(harness, report)
        plantedCost(harness, report)
        fileKeyInACore(harness, report)
    }

    // MARK: Every spelling of the folder

    static func spellings(_ harness: Harness, _ report: Report) {
        let check = "an old copy put back, read and written through 6 spellings of its folder, each by a new process"
        let target = "rolledBack for each, the old copy never built on"
        let base = harness.scratchFile("files-spellings").path
        let app = harness.appID("files")
        guard let credentials = makeCredentials(in: base) else {
            report.cannotRun(check, target: target, reason: "cannot write a credential in \(base)")
            return
        }
        let environment: [String: String?] = ["CREDENTIALS_DIRECTORY": credentials]
        let folder = "\(base)/store"
        func worker(_ arguments: [String], in spelling: String = folder) -> WorkerReply? {
            WorkerReply.parse(
                harness.worker(["files"] + arguments.prefix(1) + [spelling] + arguments.dropFirst(), environment: environment))
        }
        guard worker(["set", app, "x", "k1", "v1"])?.outcome == "ok",
            let file = try? FileManager.default.contentsOfDirectory(atPath: folder).first(where: { $0.hasSuffix(".sdict") }),
            let oldCopy = FileManager.default.contents(atPath: "\(folder)/\(file)"),
            worker(["set", app, "x", "k1", "v2"])?.outcome == "ok",
            FileManager.default.createFile(atPath: "\(folder)/\(file)", contents: oldCopy),
            (try? FileManager.default.createSymbolicLink(atPath: "\(base)/alias", withDestinationPath: base)) != nil
        else {
            report.cannotRun(check, target: target, reason: "the two writes or the copy failed")
            return
        }
        let spellings = [
            folder, "\(folder)/", "\(base)//store", "\(base)/./store", "\(base)/store/../store", "\(base)/alias/store",
        ]
        var (reads, writes) = (0, 0)
        for spelling in spellings {
            if worker(["get", app, "x", "k1"], in: spelling)?.error == "rolledBack" { reads += 1 }
            if worker(["set", app, "x", "k2", "v"], in: spelling)?.error == "rolledBack" { writes += 1 }
        }
        let unchanged = FileManager.default.contents(atPath: "\(folder)/\(file)") == oldCopy
        report.add(
            check, target: target,
            measured: "\(reads) of 6 reads and \(writes) of 6 writes rolledBack; the file \(unchanged ? "unchanged" : "CHANGED")",
            pass: reads == 6 && writes == 6 && unchanged)
    }

    // MARK: The kernel key quota of a user who is not root

    static func quota(_ harness: Harness, _ report: Report) {
        let count = harness.sizes.full ? 600 : 240
        let user = getuid() == 0 ? uid_t(65534) : getuid()  // root runs it as nobody: root's quota is 1,000,000 keys
        let check = "uid \(user), one session: \(count) dictionaries in 12 folders, then an old copy put back"
        let target = "≤ 8 kernel keys, the quota never full; rolledBack"
        guard let home = homeOf(user), let credentials = makeCredentials(in: home, owner: user) else {
            report.cannotRun(check, target: target, reason: "cannot make a folder of uid \(user) in /tmp")
            return
        }
        defer { try? FileManager.default.removeItem(atPath: home) }
        let app = harness.appID("files")
        let exe = "\(harness.executable) worker files"
        let many = run(
            as: user,
            """
            \(exe) spread \(home)/files \(app) \(count) 12 | tail -1
            echo "keys $(keyctl rlist @s | wc -w)"
            grep '^ *\(user):' /proc/key-users
            \(exe) set \(home)/files/f0 \(app) last k old >/dev/null
            for f in \(home)/files/f0/*.sdict; do cp "$f" "$f.old"; done
            \(exe) set \(home)/files/f0 \(app) last k new >/dev/null
            for f in \(home)/files/f0/*.sdict.old; do cp "$f" "${f%.old}"; done
            \(exe) get \(home)/files/f0 \(app) last k | tail -1
            """, credentials: credentials)
        let lines = many.text.split(separator: "\n").map(String.init)
        let keys = lines.first { $0.hasPrefix("keys ") }.flatMap { Int($0.dropFirst(5)) } ?? -1
        let quotaLine = lines.first { $0.contains("\(user):") }?.split(separator: " ").map(String.init) ?? []
        let quotaKeys = quotaLine.count == 5 ? quotaLine[3] : "?"
        let quotaBytes = quotaLine.count == 5 ? quotaLine[4] : "?"
        let last = lines.last.flatMap { try? JSONDecoder().decode(WorkerReply.self, from: Data($0.utf8)) }
        let full = quotaKeys.split(separator: "/").first == quotaKeys.split(separator: "/").last
        report.add(
            check, target: target,
            measured: "\(keys) keys in the session keyring (quota \(quotaKeys) keys, \(quotaBytes) bytes); "
                + "the old copy: \(last?.error ?? last?.outcome ?? "no answer")",
            pass: keys >= 0 && keys <= 8 && !full && last?.error == "rolledBack",
            note: many.succeeded ? nil : many.stderr.suffix(300).description)

        let filledCheck = "uid \(user), the key quota filled by another program, then a write"
        let filled = run(
            as: user,
            """
            n=0
            until keyctl add user sd-room x @s >/dev/null 2>&1 || [ $n -ge 200 ]; do n=$((n+1)); sleep 0.05; done
            i=0
            while [ $i -lt 400 ] && keyctl add user sd-filler-$i x @s >/dev/null 2>&1; do i=$((i+1)); done
            grep '^ *\(user):' /proc/key-users
            \(exe) set \(home)/quota \(app) tokens k v | tail -1
            """, credentials: credentials)
        let filledLines = filled.text.split(separator: "\n").map(String.init)
        let filledQuota = filledLines.first { $0.contains("\(user):") }?.split(separator: " ").dropFirst(3).first ?? "?"
        let written =
            filledLines.last.flatMap { try? JSONDecoder().decode(WorkerReply.self, from: Data($0.utf8)) }?.outcome == "ok"
        let warned = filled.stderr.contains("kernel key quota is full")
        report.add(
            filledCheck, target: "written, and a warning that rollback goes unnoticed by the next process",
            measured: "quota \(filledQuota) keys; \(written ? "written" : "NOT WRITTEN"); \(warned ? "warned" : "NO WARNING")",
            pass: written && warned)
    }

    /// A folder of `user` (mode 0700) under /tmp.
    static func homeOf(_ user: uid_t) -> String? {
        let home = "/tmp/sd-rel-files-\(UUID().uuidString)"
        guard (try? FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false)) != nil else {
            return nil
        }
        chown(home, user, user)
        chmod(home, 0o700)
        return home
    }

    /// Runs `script` (bash) as `user` (through setpriv when that is not this process's) in a
    /// session keyring of its own, as after a login, with the credential.
    static func run(as user: uid_t, _ script: String, credentials: String) -> ProcessResult {
        let session = ["/usr/bin/keyctl", "session", "-", "/bin/bash", "-c", script]
        let command =
            user == getuid()
            ? session : ["/usr/bin/setpriv", "--reuid=\(user)", "--regid=\(user)", "--clear-groups", "--"] + session
        return Subprocess.run(
            command[0], Array(command.dropFirst()), environment: ["CREDENTIALS_DIRECTORY": credentials, "HOME": "/nonexistent"],
            timeout: .seconds(600))
    }

    /// `folder/credentials/securedictionary`: 32 random bytes, as systemd hands a credential over.
    static func makeCredentials(in folder: String, owner: uid_t = getuid()) -> String? {
        let directory = "\(folder)/credentials"
        var generator = SystemRandomNumberGenerator()
        guard (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)) != nil,
            FileManager.default.createFile(
                atPath: "\(directory)/securedictionary", contents: Data(randomBytes(32, using: &generator)))
        else { return nil }
        for path in [directory, "\(directory)/securedictionary"] { chown(path, owner, owner) }
        chmod(folder, 0o700)
        chmod(directory, 0o700)
        return directory
    }

    // MARK: A planted scrypt cost

    static func plantedCost(_ harness: Harness, _ report: Report) {
        let folder = harness.scratchFile("files-planted").path
        let app = harness.appID("files")
        let passphrase = Data("correct horse\n".utf8)
        func open(_ timeout: Int) -> (WorkerReply?, ProcessResult) {
            let result = harness.worker(["files", "open-passphrase", folder, app, "x", "\(timeout)"], stdin: passphrase)
            return (WorkerReply.parse(result), result)
        }
        let written = WorkerReply.parse(
            harness.worker(["files", "set-passphrase", folder, app, "x", "k", "v"], stdin: passphrase))
        guard written?.outcome == "ok",
            let name = try? FileManager.default.contentsOfDirectory(atPath: folder).first(where: { $0.hasSuffix(".sdict") }),
            let good = FileManager.default.contents(atPath: "\(folder)/\(name)")
        else {
            report.cannotRun(
                "a planted scrypt cost", target: "corrupt", reason: "the first write failed: \(String(describing: written))")
            return
        }
        let path = "\(folder)/\(name)"
        // The largest cost the reader accepted before: 2^20 × 8, p = 4 (4 GiB of work), a new salt.
        _ = FileManager.default.createFile(atPath: path, contents: planting(good, log2N: 20, r: 8, p: 4))
        let (largest, _) = open(3_000)
        report.add(
            "a planted header of 2^20 × 8, p = 4 (4 GiB of work) and a new salt, 3 s deadline, the right passphrase",
            target: "corrupt, no stretch: ≤ 100 ms, ≤ 64 MiB",
            measured: String(
                format: "%@ in %.1f ms, max RSS %@", largest?.error ?? largest?.outcome ?? "no answer",
                largest?.milliseconds ?? -1, largest?.detail ?? "?"),
            pass: largest?.error == "corrupt" && (largest?.milliseconds ?? .infinity) <= 100
                && (Int(largest?.detail?.split(separator: " ").first ?? "") ?? .max) <= 64 * 1024)
        // The costliest the reader accepts now (twice the standard: 256 MiB), with a 200 ms deadline.
        _ = FileManager.default.createFile(atPath: path, contents: planting(good, log2N: 18, r: 8, p: 1))
        let (accepted, _) = open(200)
        report.add(
            "a planted header of 2^18 × 8 (256 MiB, the most accepted), 200 ms deadline",
            target: "timedOut by 300 ms",
            measured: String(
                format: "%@ after %.0f ms", accepted?.error ?? accepted?.outcome ?? "no answer", accepted?.milliseconds ?? -1),
            pass: accepted?.error == "timedOut" && (accepted?.milliseconds ?? .infinity) <= 300)
    }

    // MARK: A file's key in a core

    /// The debug-built tests scan for the file stores' keys (`FileStoreMemory`); this is the
    /// same search in the optimised build users run, where code differs: there the compiler
    /// inlines CFileStoreShim's `sd_scrub_stack` into its callers. The key worked out here must
    /// open the file, or the scan would prove nothing.
    static func fileKeyInACore(_ harness: Harness, _ report: Report) {
        let check =
            "a credential and its newest file key after 3 writes, a read, forgetKey and the release (release build)"
        let target = "0 in memory, 0 in dead stack frames"
        let base = harness.scratchFile("files-key-scan").path
        guard let credentials = makeCredentials(in: base),
            let master = FileManager.default.contents(atPath: "\(credentials)/securedictionary")
        else {
            report.cannotRun(check, target: target, reason: "cannot write a credential in \(base)")
            return
        }
        do {
            let worker = try LiveChild(
                harness.executable, ["worker", "files", "keys", "\(base)/store", harness.appID("files")],
                environment: ["CREDENTIALS_DIRECTORY": credentials])
            defer {
                try? worker.send("done")
                _ = worker.finish(timeout: .seconds(30))
            }
            guard worker.nextLine(timeout: .seconds(60)) == "ready",
                let name = try? FileManager.default.contentsOfDirectory(atPath: "\(base)/store").first(where: {
                    $0.hasSuffix(".sdict")
                }),
                let file = FileManager.default.contents(atPath: "\(base)/store/\(name)")
            else {
                report.cannotRun(check, target: target, reason: "the worker did not write and read")
                return
            }
            let key = fileKey(of: [UInt8](file), master: master)
            guard opens(file, with: key) else {
                report.cannotRun(check, target: target, reason: "the key worked out here does not open the file")
                return
            }
            let scan = try CoreScan.take(of: worker.pid, secrets: ["file key": key, "credential": [UInt8](master)])
            report.add(
                check, target: target,
                measured:
                    "\(scan.inMemory.values.reduce(0, +)) in memory, \(scan.onStacks.values.reduce(0, +)) in dead stack frames",
                pass: scan.foundAnywhere.isEmpty,
                note: scan.places.isEmpty ? nil : scan.places.values.joined().prefix(3).joined(separator: "; "))
        } catch {
            report.add(check, target: target, measured: "could not measure", pass: false, note: "\(error)")
        }
    }

    /// The key of a version-2 file of a master secret: HKDF-SHA256 of the secret with the
    /// file's salt, which sits before the 12-byte nonce at the end of its header (the layout
    /// is in `EncryptedItemFile.swift`).
    static func fileKey(of file: [UInt8], master: Data) -> [UInt8] {
        let salt = headerSize(of: file) - 12 - 32
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: master), salt: file[salt..<(salt + 32)],
            info: Array("io.github.securedictionary.file.v1".utf8), outputByteCount: 32)
        return key.withUnsafeBytes { Array($0) }
    }

    /// The header's size in a version-2 file of a master secret (no scrypt parameters).
    static func headerSize(of file: [UInt8]) -> Int { 8 + 1 + 2 + (Int(file[9]) << 8 | Int(file[10])) + 1 + 16 + 8 + 32 + 12 }

    /// Whether `key` opens `file`: the proof that the scan looks for the right bytes.
    static func opens(_ file: Data, with key: [UInt8]) -> Bool {
        let bytes = [UInt8](file)
        let header = headerSize(of: bytes)
        guard bytes.count >= header + 16,
            let nonce = try? AES.GCM.Nonce(data: bytes[(header - 12)..<header]),
            let box = try? AES.GCM.SealedBox(
                nonce: nonce, ciphertext: bytes[header..<(bytes.count - 16)], tag: bytes[(bytes.count - 16)...])
        else { return false }
        return (try? AES.GCM.open(box, using: SymmetricKey(data: key), authenticating: bytes[..<header])) != nil
    }

    /// `file` with scrypt's cost replaced and a new salt.
    static func planting(_ file: Data, log2N: UInt8, r: UInt8, p: UInt8) -> Data {
        var bytes = [UInt8](file)
        let identity = Int(bytes[9]) << 8 | Int(bytes[10])
        let cost = 8 + 1 + 2 + identity + 1
        bytes[cost] = log2N
        bytes[cost + 1] = r
        bytes[cost + 2] = p
        for index in (cost + 3)..<(cost + 19) { bytes[index] = UInt8.random(in: 0...255) }
        return Data(bytes)
    }
}

extension Worker {
    /// `files COMMAND FOLDER …`: the encrypted-file stores, under the credential in
    /// `$CREDENTIALS_DIRECTORY` or a passphrase on standard input (standard cost, not kept).
    /// `set FOLDER APP NAME KEY VALUE`, `get FOLDER APP NAME KEY` (detail: the value),
    /// `spread BASE APP COUNT FOLDERS` (one write in each of COUNT dictionaries, in
    /// BASE/f0 … f(FOLDERS-1)), `diagnose FOLDER` (detail: the rollback record's problem),
    /// `set-passphrase FOLDER APP NAME KEY VALUE`, `open-passphrase FOLDER APP NAME TIMEOUT_MS`
    /// (milliseconds: the open's; detail: "MAXRSS_KB KB"), `keys FOLDER APP` (``useKeysThenWait(_:app:)``).
    static func files(_ arguments: [String]) {
        guard arguments.count >= 2 else { usage() }
        let folder = arguments[1]
        let credential = EncryptedFileStore(folderPath: folder, keySource: .systemdCredential())
        let passphrase = EncryptedFileStore(folderPath: folder, keySource: .passphrase(.fileDescriptor(0), cache: .none))
        let start = ContinuousClock.now
        do {
            switch (arguments[0], arguments.count) {
            case ("set", 6), ("set-passphrase", 6):
                let store = arguments[0] == "set" ? credential : passphrase
                try SecureDictionary(name: arguments[3], applicationID: arguments[2], options: .init(store: store))
                    .setValue(.string(arguments[5]), forKey: arguments[4])
                WorkerReply(outcome: "ok").print()
            case ("get", 5):
                let value = try SecureDictionary(
                    name: arguments[3], applicationID: arguments[2], options: .init(store: credential))[
                        arguments[4]]
                WorkerReply(outcome: "ok", detail: value?.stringValue).print()
            case ("spread", 5):
                guard let count = Int(arguments[3]), let folders = Int(arguments[4]), folders > 0 else { usage() }
                let stores = (0..<folders).map {
                    EncryptedFileStore(folderPath: "\(folder)/f\($0)", keySource: .systemdCredential())
                }
                for index in 0..<count {
                    try SecureDictionary(
                        name: "d\(index)", applicationID: arguments[2], options: .init(store: stores[index % folders])
                    ).setValue(1, forKey: "k")
                }
                WorkerReply(outcome: "ok", count: count).print()
            case ("keys", 3):
                try useKeysThenWait(credential, app: arguments[2])
            case ("open-passphrase", 5):
                let timeout = Duration.milliseconds(Int(arguments[4]) ?? 3_000)
                let dictionary = try SecureDictionary(
                    name: arguments[3], applicationID: arguments[2], options: .init(timeout: timeout, store: passphrase))
                WorkerReply(outcome: "ok", milliseconds: elapsedMilliseconds(since: start), count: dictionary.count).print()
            default:
                usage()
            }
        } catch {
            WorkerReply(
                outcome: "error", error: caseName(error), milliseconds: elapsedMilliseconds(since: start),
                detail: "\(peakResidentKilobytes()) KB"
            ).print()
        }
    }
}

extension Worker {
    /// For the file-key scan: three writes, a read by a new instance, `forgetKey()` and the
    /// release, each in a frame that is gone when "ready" is printed; then it waits for a line.
    static func useKeysThenWait(_ store: EncryptedFileStore, app: String) throws {
        func written() throws {
            let dictionary = try SecureDictionary(name: "keys", applicationID: app, options: .init(store: store))
            for value in ["one", "two", "three"] { try dictionary.setValue(.string(value), forKey: "k") }
        }
        func read() throws -> String? {
            try SecureDictionary(name: "keys", applicationID: app, options: .init(store: store))["k"]?.stringValue
        }
        try written()
        let readBack = try read()
        store.forgetKey()
        print(readBack == "three" ? "ready" : "read back \(readBack ?? "nothing")")
        fflush(nil)
        _ = readLine()
    }
}

/// This process's peak resident size in KiB: `VmHWM` of /proc/self/status, which belongs to
/// the memory the process has had since its `exec`. Not `getrusage`'s `ru_maxrss`: Linux
/// carries over into it the parent's resident size at the `posix_spawn` (the child runs in
/// the parent's memory until it execs), so a worker spawned by a 500 MiB parent reported
/// 527,836 KB where it used 24,100 KB, and scenario 13's ≤ 64 MiB row failed in a full run.
func peakResidentKilobytes() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return Int(line.dropFirst("VmHWM:".count).split(whereSeparator: \.isWhitespace).first ?? "") ?? -1
}
