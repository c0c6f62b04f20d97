import Foundation
import Logging
import SecureDictionary
import SecureDictionaryTestSupport
import Synchronization

/// Scenario 11: no acknowledged write is lost to a writer the library did not see:
/// writers in other environments, another tool between a load and a write; no file outside
/// the keyring; and the width of the one window left.
enum OutsideWriters {
    static func run(_ harness: Harness, _ report: Report) {
        guard harness.hasKeyring(report, check: "writers in other environments", target: "0 lost") else { return }
        mixedEnvironments(harness, report)
        outsideToolBetweenLoadAndWrite(harness, report)
        noFilesAndUnusableFolders(harness, report)
        residualWindow(harness, report)
    }

    /// Writers whose runtime folders differ; the old lock-file stamp lost half of their writes.
    static func mixedEnvironments(_ harness: Harness, _ report: Report) {
        let sizes = harness.sizes
        let app = harness.appID("mixed")
        let readOnly = harness.scratchFile("read-only-runtime")
        try? FileManager.default.createDirectory(
            at: readOnly, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o500])
        let privateRuntime = harness.scratchFile("private-runtime")
        try? FileManager.default.createDirectory(
            at: privateRuntime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let environments: [[String: String?]] = [
            ["XDG_RUNTIME_DIR": privateRuntime.path], ["XDG_RUNTIME_DIR": privateRuntime.path],
            ["XDG_RUNTIME_DIR": nil], ["XDG_RUNTIME_DIR": nil],
            ["XDG_RUNTIME_DIR": "relative-runtime"],
            ["XDG_RUNTIME_DIR": harness.scratchFile("missing/runtime").path],
            ["XDG_RUNTIME_DIR": readOnly.path],
        ]
        let mutations = sizes.mixedMutations
        let check =
            "\(environments.count) processes in 5 kinds of runtime folder × \(mutations) mutations + \(mutations / 4) increments"
        let target = "0 lost, 0 phantom, counter == increments, 0 errors"
        var writers: [LiveChild] = []
        for (index, environment) in environments.enumerated() {
            do {
                writers.append(
                    try harness.liveWorker(
                        ["lost-writer", app, "mixed", "\(index)", "\(mutations)", "\(mutations / 4)", "\(0xBEEF + index)"],
                        environment: environment))
            } catch {
                report.cannotRun(check, target: target, reason: "cannot start a writer: \(error)")
                return
            }
        }
        let outcome = LostUpdates.collect(writers, app: app, name: "mixed")
        report.add(
            check, target: target, measured: outcome.summary,
            pass: outcome.passes(expectedIncrements: environments.count * (mutations / 4)), note: outcome.firstError)
    }

    /// secret-tool, python `keyring` or `secretstorage` replace the item between a load and a
    /// write (here: the raw D-Bus fixture, which is python too).
    static func outsideToolBetweenLoadAndWrite(_ harness: Harness, _ report: Report) {
        let rounds = harness.sizes.outsideRounds
        let check = "another tool replaces the item between our load and our write, \(rounds) rounds"
        let target = "its change and ours both kept, our cache sees its change"
        do {
            let fixture = try harness.fixture()
            let app = harness.appID("outside")
            let dictionary = try SecureDictionary(
                name: "outside", applicationID: app, options: .init(store: SecretServiceStore()))
            var lost = 0
            var unseen = 0
            for round in 0..<rounds {
                try dictionary.setValue(.integer(round), forKey: "ours-\(round)")
                var theirs = try dictionary.entries()
                theirs["theirs-\(round)"] = .integer(round)
                try fixture.plant([UInt8](try BinaryPropertyListCoding.encode(theirs)), for: dictionary.item)
                try dictionary.setValue(.integer(round), forKey: "after-\(round)")
                if dictionary["theirs-\(round)"] == nil { unseen += 1 }
                let fresh = try SecureDictionary(name: "outside", applicationID: app, options: .init(store: SecretServiceStore()))
                if fresh["theirs-\(round)"] == nil || fresh["after-\(round)"] == nil || fresh["ours-\(round)"] == nil {
                    lost += 1
                }
            }
            report.add(
                check, target: target, measured: "\(lost) rounds lost a change, \(unseen) rounds our cache missed theirs",
                pass: lost == 0 && unseen == 0)
        } catch {
            report.add(check, target: target, measured: "error \(caseName(error))", pass: false)
        }
    }

    /// Nothing is written outside the keyring, and no folder problem affects reads or writes.
    static func noFilesAndUnusableFolders(_ harness: Harness, _ report: Report) {
        let app = harness.appID("folders")
        let runtime = harness.scratchFile("fresh-runtime")
        let temporary = harness.scratchFile("fresh-tmp")
        for folder in [runtime, temporary] {
            try? FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let written = harness.worker(
            ["set", app, "folders", "k", "v"],
            environment: ["XDG_RUNTIME_DIR": runtime.path, "TMPDIR": temporary.path])
        let files = [runtime, temporary].flatMap { (try? FileManager.default.contentsOfDirectory(atPath: $0.path)) ?? [] }
        report.add(
            "a write with a fresh runtime folder and TMPDIR", target: "succeeds, 0 files created",
            measured: "\(written.succeeded ? "succeeded" : "failed (\(written.how))"), \(files.count) files created",
            pass: written.succeeded && files.isEmpty, note: written.succeeded ? nil : written.stderr)

        // A `securedictionary` file (mode 0400) where the old lock folder would go, a folder
        // left by another user's `sudo -E`, a missing folder, a read-only folder.
        let blocked = harness.scratchFile("blocked-runtime")
        try? FileManager.default.createDirectory(
            at: blocked, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        FileManager.default.createFile(
            atPath: blocked.appendingPathComponent("securedictionary").path, contents: Data(),
            attributes: [.posixPermissions: 0o400])
        let readOnly = harness.scratchFile("read-only-runtime-2")
        try? FileManager.default.createDirectory(
            at: readOnly, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o500])
        let folders = [blocked.path, readOnly.path, harness.scratchFile("no/such/folder").path, "relative-runtime", "/"]
        var failures: [String] = []
        for (index, folder) in folders.enumerated() {
            let environment: [String: String?] = ["XDG_RUNTIME_DIR": folder]
            let write = harness.worker(["set", app, "folders", "k\(index)", "v"], environment: environment)
            let read = harness.worker(["open", app, "folders", "3000"], environment: environment)
            if !write.succeeded { failures.append("write with \(folder): \(WorkerReply.parse(write)?.error ?? write.how)") }
            if WorkerReply.parse(read)?.outcome != "ok" {
                failures.append("read with \(folder): \(WorkerReply.parse(read)?.error ?? read.how)")
            }
        }
        report.add(
            "reads and writes with \(folders.count) unusable runtime folders", target: "0 errors",
            measured: "\(failures.count) errors", pass: failures.isEmpty, note: failures.first)
    }

    /// The one window left: from the check's answer to the write's answer, as the library
    /// traces it, on a 1,000-entry dictionary.
    static func residualWindow(_ harness: Harness, _ report: Report) {
        let writes = harness.sizes.windowWrites
        let check = "check-to-write window, 1,000 entries, \(writes) writes"
        let windows = TraceCollector(key: "check-to-write-us")
        let logger = Logger(label: "window") { _ in TraceCollector.Handler(collector: windows) }
        do {
            let dictionary = try SecureDictionary(
                name: "window", applicationID: harness.appID("window"),
                options: .init(store: SecretServiceStore(), logger: logger))
            try dictionary.update { entries in
                for index in 0..<1_000 { entries["key-\(index)"] = .string("value-\(index)") }
            }
            windows.reset()
            for index in 0..<writes { try dictionary.setValue(.integer(index), forKey: "key-0") }
        } catch {
            report.add(check, target: "measured", measured: "error \(caseName(error))", pass: false)
            return
        }
        let sorted = windows.microseconds.sorted()
        guard !sorted.isEmpty else {
            report.add(check, target: "measured", measured: "no trace message carried check-to-write-us", pass: false)
            return
        }
        let median = Double(sorted[sorted.count / 2]) / 1_000
        let p99 = Double(sorted[min(sorted.count - 1, sorted.count * 99 / 100)]) / 1_000
        report.add(
            check, target: "measured and documented (an outside writer's change can be lost only here)",
            measured: "median \(formatMilliseconds(median)), p99 \(formatMilliseconds(p99)) (\(sorted.count) writes)",
            pass: sorted.count == writes)
    }
}

/// Collects one metadata value (in µs) of the library's "stored" trace messages:
/// `check-to-write-us` (the residual window) or `lock-wait-us` (the wait for other writers).
final class TraceCollector: Sendable {
    let key: String
    private let values = Mutex<[Int]>([])
    init(key: String) { self.key = key }
    var microseconds: [Int] { values.withLock { $0 } }
    func reset() { values.withLock { $0.removeAll() } }

    struct Handler: LogHandler {
        let collector: TraceCollector
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            guard event.message.description == "stored", case .string(let text)? = event.metadata?[collector.key],
                let value = Int(text)
            else { return }
            collector.values.withLock { $0.append(value) }
        }
    }
}
