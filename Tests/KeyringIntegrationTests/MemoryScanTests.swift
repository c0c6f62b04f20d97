import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

/// Issue 37: no key or value the library keeps outlives its dictionary, and none reaches a
/// core dump while it lives. Dictionaries holding canaries (keys, strings, `Data`, nested
/// arrays and dictionaries, a `Codable`-shaped value) are planted by another process, so the
/// process scanned (`sd-test-writer scan`) holds a canary only through the library: it opens
/// them, the items are replaced (a new generation), it reloads, writes one key and then
/// keeps them unread ("loaded"), releases them ("released"), or copies every key and value
/// out ("control", which must find every canary, or the scan proves nothing). gdb's `gcore`
/// takes the core; ``CoreScan`` searches it. Runs once, with gnome-keyring.
@Suite(
    .serialized,
    .enabled(if: PrivateKeyring.enabled && PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct MemoryScan {
    static let count = 8
    let app = "it.scan.\(UUID().uuidString)"
    let folder: String

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("sd-scan-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    @Test func noKeyOrValueOfTheKeyringIsInACoreLoadedOrReleased() throws {
        let scans = try ["control", "loaded", "released"].map { mode in
            try (mode, scan(mode: mode, plant: plantInKeyring))
        }
        try expectNoCanaries(scans)
    }

    @Test func theEncryptedFileStoreKeepsNoKeyOrValueInACoreEither() throws {
        let processes = try FileStoreProcesses()
        try processes.makeCredential(in: "\(processes.base)/credentials")
        let environment = processes.credentialEnvironment("\(processes.base)/credentials").merging([
            "SD_TEST_WRITER_FOLDER": "\(processes.base)/files"
        ]) { _, new in new }
        let plant = { (files: [String]) throws in
            let output = try processes.writer(["plant", app] + files, environment)
            try #require(output.trimmedText == "ok \(files.count)", "plant: \(output)")
        }
        let scans = try ["control", "loaded", "released"].map { mode in
            try (mode, scan(mode: mode, environment: environment, plant: plant))
        }
        try expectNoCanaries(scans)
    }

    /// The pages the library keeps secrets in are locked while loaded and unlocked once
    /// released; with `ulimit -l 64` (and no CAP_IPC_LOCK) everything works unlocked, the log
    /// says so once, and `SecureMemory.status` counts it, for `secure-dict doctor`.
    @Test func lockedMemoryRisesAndFallsAndA64KiBLimitFallsBack() throws {
        let released = try scan(mode: "released", plant: plantInKeyring)
        #expect(released.opened.after - released.opened.before >= Self.count * 4, "VmLck while loaded: \(released.opened)")
        #expect(released.ready.locked < released.opened.after, "VmLck after release: \(released.ready)")
        #expect(released.ready.unlockedRegions == 0 && released.ready.lockFailures == 0)

        // 24 dictionaries take more than 64 KiB (16 pages).
        let limited = try scan(mode: "loaded", count: 24, memoryLockLimit: 64, plant: plantInKeyring)
        #expect(limited.opened.after <= 64, "VmLck under ulimit -l 64: \(limited.opened)")
        #expect(limited.ready.unlockedRegions > 0 && limited.ready.lockFailures > 0, "\(limited.ready)")
        let warnings = limited.stderr.components(separatedBy: "could not lock the memory holding secrets").count - 1
        #expect(warnings == 1, "the warning, once: \(limited.stderr.suffix(500))")
        #expect(limited.core.found.isEmpty, "in the core: \(limited.core.inMemory.filter { $0.value > 0 })")
    }

    // MARK: Helpers

    struct Run {
        var opened: (pid: Int32, before: Int, after: Int)
        var ready: (locked: Int, lockedRegions: Int, unlockedRegions: Int, lockFailures: Int)
        var core: CoreScan
        var stderr: String
    }

    /// One scanned process in `mode` (run by `wrapper`, such as a sandbox), its dictionaries
    /// planted by `plant` (first and second generation), its core searched for both
    /// generations' canaries.
    func scan(
        mode: String, count: Int = Self.count, environment: [String: String] = [:], memoryLockLimit: Int? = nil,
        wrapper: [String] = [], plant: ([String]) throws -> Void
    ) throws -> Run {
        let first = CanarySet(generation: 1, count: count)
        let second = CanarySet(generation: 2, count: count)
        try plant(try first.blobs(in: "\(folder)/first-\(mode)-\(count)"))
        var command = [KeyringHarness.writer, "scan", app, "\(count)", mode]
        if let memoryLockLimit {
            command =
                [
                    try CoreScan.tool("setpriv"), "--bounding-set=-ipc_lock", "--", "/bin/sh", "-c",
                    "ulimit -l \(memoryLockLimit) && exec \"$0\" \"$@\"",
                ] + command
        }
        let child = try Child(wrapper + command, environment: environment)
        let opened = try child.line().split(separator: " ")
        try #require(opened.count == 4 && opened[0] == "opened", "\(opened) \(child.errors)")
        try plant(try second.blobs(in: "\(folder)/second-\(mode)-\(count)"))
        try child.send("go")
        let ready = try child.line().split(separator: " ").compactMap { Int($0) }
        try #require(ready.count == 4, "\(ready) \(child.errors)")
        // Its pid as this process sees it (a sandbox may give it a pid namespace of its own).
        let pid = try #require(
            Self.process(running: [KeyringHarness.writer, "scan", app, "\(count)", mode]), "the scanned process is not in /proc")
        let core = try CoreScan.take(of: pid, secrets: first.secrets.merging(second.secrets) { $1 }, in: folder)
        try child.send("done")
        let status = child.finish()
        #expect(status == 0, "the scanned process: exit \(status), \(child.errors)")
        return Run(
            opened: (Int32(opened[1])!, Int(opened[2])!, Int(opened[3])!), ready: (ready[0], ready[1], ready[2], ready[3]),
            core: core, stderr: child.errors)
    }

    /// The process whose command line is `command`.
    static func process(running command: [String]) -> Int32? {
        let line = Data(command.joined(separator: "\u{0}").utf8) + Data([0])
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.compactMap { Int32($0) } ?? []
        return pids.first { FileManager.default.contents(atPath: "/proc/\($0)/cmdline") == line }
    }

    /// The control found every canary of the generation it copied; the others found none.
    func expectNoCanaries(_ scans: [(String, Run)]) throws {
        let control = try #require(scans.first { $0.0 == "control" }?.1.core)
        let expected = Set(CanarySet(generation: 2, count: Self.count).secrets.keys)
        #expect(control.found.isSuperset(of: expected), "the control missed \(expected.subtracting(control.found).sorted())")
        for (mode, run) in scans where mode != "control" {
            #expect(run.core.found.isEmpty, "\(mode): in the core's memory: \(run.core.inMemory.filter { $0.value > 0 })")
            print(
                "memory scan, \(mode): \(run.core.found.count) of \(run.core.inMemory.count) canaries in memory; "
                    + "residue \(run.core.residue)")
        }
        print("memory scan, control: \(control.found.count) of \(control.inMemory.count) canaries found")
    }

    /// The Secret Service: planted raw, as Python's `plistlib` wrote them.
    func plantInKeyring(_ files: [String]) throws {
        for file in files {
            let item = try KeyringItem(
                dictionaryName: URL(fileURLWithPath: file).lastPathComponent, applicationID: app, collection: .default)
            let output = try KeyringHarness.fixture(
                ["plant", "--label", item.name] + KeyringHarness.attributeArguments(item.attributes),
                input: try Data(contentsOf: URL(fileURLWithPath: file)))
            try #require(output.status == 0, "plant: \(output.stderr)")
        }
    }

    /// A process talked to line by line.
    final class Child {
        private let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        private let errorFile: URL
        private var buffered = Data()

        init(_ command: [String], environment: [String: String]) throws {
            errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("sd-scan-\(UUID().uuidString).err")
            _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
            process.executableURL = URL(fileURLWithPath: command[0])
            process.arguments = Array(command.dropFirst())
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
            process.standardInput = input
            process.standardOutput = output
            process.standardError = try FileHandle(forWritingTo: errorFile)
            try process.run()
        }

        deinit {
            if process.isRunning { process.terminate() }
            try? FileManager.default.removeItem(at: errorFile)
        }

        /// The next line of its output (empty once it ended).
        func line() throws -> String {
            while !buffered.contains(0x0A) {
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                buffered += chunk
            }
            let end = buffered.firstIndex(of: 0x0A) ?? buffered.endIndex
            defer { buffered = Data(buffered[min(end + 1, buffered.endIndex)...]) }
            return String(decoding: buffered[..<end], as: UTF8.self)
        }

        func send(_ line: String) throws { try input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8)) }

        var errors: String { (try? String(contentsOf: errorFile, encoding: .utf8)) ?? "" }

        func finish() -> Int32 {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
            return process.terminationStatus
        }
    }
}
