import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

/// No key or value the library keeps outlives its dictionary, and none reaches a
/// core dump while it lives (the store contract runs its per-store scans). Dictionaries holding canaries (keys, strings, `Data`, nested
/// arrays and dictionaries, a `Codable`-shaped value) are planted by another process, so the
/// process scanned (`sd-test-writer scan`) holds a canary only through the library: it opens
/// them, the items are replaced (a new generation), it reloads, writes one key and then
/// keeps them unread ("loaded"), releases them ("released"), or copies every key and value
/// out ("control", which must find every canary, or the scan proves nothing). ``CoreScan``
/// searches what a core of it would hold. Runs once, with gnome-keyring.
@Suite(
    .serialized,
    .enabled(if: PrivateKeyring.enabled && PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct MemoryScan {
    static let count = 8
    let app = "it.scan.\(UUID().uuidString)"
    let folder: String

    init() throws {
        folder = try TemporaryFolder.create("sd-scan")
    }

    // The three stores' scans, loaded and released beside a control: the store contract's
    // memory clause (`StoreContract.noKeyOrValueIsInACoreLoadedOrReleased`) runs them.

    func scanTheKeyring() throws {
        let scans = try ["control", "loaded", "released"].map { mode in
            try (mode, scan(mode: mode, plant: plantInKeyring))
        }
        try expectNoCanaries(scans)
    }

    func scanTheEncryptedFileStore() throws {
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

    /// `InMemoryKeyringStore` keeps what it stores as the library keeps secrets: a process
    /// whose in-memory store holds dictionaries (read from files straight into secret bytes)
    /// and opened them holds no canary in its core, whether it keeps them unread or released
    /// them; the control copies every value out.
    func scanTheInMemoryStore() throws {
        let canaries = CanarySet(generation: 1, count: 4)
        let files = try canaries.blobs(in: "\(folder)/memory-store")
        var cores: [String: CoreScan] = [:]
        for mode in ["control", "loaded", "released"] {
            let child = try LiveChild(KeyringHarness.writer, ["scan-memory-store", app, mode] + files)
            let ready = (child.nextLine(timeout: .seconds(120)) ?? "").split(separator: " ")
            try #require(ready.count == 2 && ready[0] == "ready", "\(ready) \(child.errors)")
            cores[mode] = try CoreScan.take(of: try #require(Int32(ready[1])), secrets: canaries.secrets)
            try child.send("done")
            #expect(child.finish(timeout: .seconds(60)).status == 0, "\(mode): \(child.errors)")
        }
        let control = try #require(cores["control"])
        let expected = Set(canaries.secrets.keys)
        #expect(control.found.isSuperset(of: expected), "the control missed \(expected.subtracting(control.found).sorted())")
        for mode in ["loaded", "released"] {
            let core = try #require(cores[mode])
            #expect(core.found.isEmpty, "\(mode): in the core's memory: \(core.inMemory.filter { $0.value > 0 })")
        }
    }

    /// Small items too, where a transient copy of the whole blob fits a stack buffer, and in
    /// ten processes, since a stack copy outlives its frame in some runs only: each process
    /// loads the same two small dictionaries (one entry) and two large ones (a hundred), and is
    /// scanned loaded-and-unread or released, beside a control; dead stack frames count too. The processes run side by side on one planting (about 30 s).
    @Test func smallItemsLeaveNoCopyOnAStackInTenProcesses() throws {
        let (count, small) = (4, 2)
        let modes = ["control"] + Array(repeating: ["loaded", "released"], count: 5).joined()
        let first = CanarySet(generation: 1, count: count, small: small)
        let second = CanarySet(generation: 2, count: count, small: small)
        try plantInKeyring(try first.blobs(in: "\(folder)/first-together"))
        let children = try modes.map { mode in
            try LiveChild(KeyringHarness.writer, ["scan", app, "\(count)", mode])
        }
        let pids = try children.map { child in
            let opened = (child.nextLine(timeout: .seconds(300)) ?? "").split(separator: " ")
            try #require(opened.count == 4 && opened[0] == "opened", "\(opened) \(child.errors)")
            return try #require(Int32(opened[1]))
        }
        try plantInKeyring(try second.blobs(in: "\(folder)/second-together"))
        for child in children { try child.send("go") }
        var cores: [CoreScan] = []
        for (child, pid) in zip(children, pids) {
            let ready = (child.nextLine(timeout: .seconds(300)) ?? "").split(separator: " ")
            try #require(ready.count == 5 && ready[0] == "ready", "\(ready) \(child.errors)")
            cores.append(try CoreScan.take(of: pid, secrets: first.secrets.merging(second.secrets) { $1 }))
        }
        for child in children {
            try child.send("done")
            #expect(child.finish(timeout: .seconds(120)).status == 0, "a scanned process: \(child.errors)")
        }
        let control = try #require(cores.first)
        let expected = Set(second.secrets.keys)
        #expect(control.found.isSuperset(of: expected), "the control missed \(expected.subtracting(control.found).sorted())")
        let leaking = zip(modes, cores).dropFirst().filter { !$0.1.foundAnywhere.isEmpty }
        for (mode, core) in leaking { Issue.record("\(mode): \(core.foundAnywhere.sorted()) at \(core.places)") }
        print(
            "memory scan, small and large items: a canary in \(leaking.count) of \(cores.count - 1) processes "
                + "(\(leaking.filter { $0.0 == "loaded" }.count) loaded, \(leaking.filter { $0.0 == "released" }.count) released); "
                + "control: \(control.found.count) of \(control.inMemory.count) found")
    }

    /// A `fork()` child finds the pages of a dictionary its parent loaded from the keyring
    /// wiped (`MADV_WIPEONFORK`): it reads them (plain loads, all it does before `_exit`) and
    /// finds only zeros, while the parent's pages still hold the stored blob (the control).
    @Test func aForkChildFindsTheSecretPagesWiped() throws {
        try plantInKeyring(try CanarySet(generation: 1, count: 1, small: 1).blobs(in: "\(folder)/fork"))
        let dictionary = try SecureDictionary(name: "scan-0", applicationID: app)
        let region = dictionary.state.loadedGeneration.region
        let (base, count) = (UnsafeRawPointer(region.base), region.mappedCount)
        #expect(Array(UnsafeRawBufferPointer(start: base, count: 8)) == Array("bplist00".utf8), "the control")
        let child = fork()
        if child == 0 { _exit(Self.nonZeroBytes(base, count) == 0 ? 0 : 1) }
        try #require(child > 0, "fork: errno \(errno)")
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        #expect(status == 0, "the child found secret bytes in its copy of the pages (wait status \(status))")
        #expect(Self.nonZeroBytes(base, count) > 0, "the parent's pages were wiped too")
        withExtendedLifetime(dictionary) {}
    }

    /// How many of the `count` bytes at `base` are not zero: only loads, nothing a fork child
    /// of a threaded process may not run.
    static func nonZeroBytes(_ base: UnsafeRawPointer, _ count: Int) -> Int {
        var nonZero = 0
        for offset in 0..<count where base.load(fromByteOffset: offset, as: UInt8.self) != 0 { nonZero += 1 }
        return nonZero
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
        mode: String, count: Int = Self.count, small: Int = 0, environment: [String: String] = [:], memoryLockLimit: Int? = nil,
        wrapper: [String] = [], plant: ([String]) throws -> Void
    ) throws -> Run {
        let first = CanarySet(generation: 1, count: count, small: small)
        let second = CanarySet(generation: 2, count: count, small: small)
        try plant(try first.blobs(in: "\(folder)/first-\(mode)-\(count)"))
        var command = [KeyringHarness.writer, "scan", app, "\(count)", mode]
        if let memoryLockLimit {
            command =
                [
                    try CoreScan.tool("setpriv"), "--bounding-set=-ipc_lock", "--", "/bin/sh", "-c",
                    "ulimit -l \(memoryLockLimit) && exec \"$0\" \"$@\"",
                ] + command
        }
        let child = try LiveChild((wrapper + command)[0], Array((wrapper + command).dropFirst()), environment: environment)
        let opened = (child.nextLine(timeout: .seconds(300)) ?? "").split(separator: " ")
        try #require(opened.count == 4 && opened[0] == "opened", "\(opened) \(child.errors)")
        try plant(try second.blobs(in: "\(folder)/second-\(mode)-\(count)"))
        try child.send("go")
        let ready = (child.nextLine(timeout: .seconds(300)) ?? "").split(separator: " ").compactMap { Int($0) }
        try #require(ready.count == 4, "\(ready) \(child.errors)")
        // Its pid as this process sees it (a sandbox may give it a pid namespace of its own).
        let pid = try #require(
            Self.process(running: [KeyringHarness.writer, "scan", app, "\(count)", mode]), "the scanned process is not in /proc")
        let core = try CoreScan.take(of: pid, secrets: first.secrets.merging(second.secrets) { $1 })
        try child.send("done")
        let status = child.finish(timeout: .seconds(120)).status
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
                    + "in dead stack frames \(run.core.onStacks)")
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
}
