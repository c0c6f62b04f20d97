import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Scenario 9: no key or value the library keeps outlives its dictionary, and none
/// reaches a core dump while it lives. Dictionaries holding canaries (a key with a string
/// value, `Data`, strings nested in an array and a dictionary, a `Codable`-shaped dictionary),
/// written by Python's `plistlib`, are planted over D-Bus by this process, so the worker holds
/// a canary only through the library. The worker opens them; they are replaced (a second
/// generation); it reloads, writes one key, and keeps them unread ("loaded"), releases the
/// last instance ("released"), or copies every key and value out ("control", which must find
/// every canary of the second generation, or the measurement is void). ``CoreScan`` counts
/// 16-byte slices of both generations' canaries in what a core of the worker would hold, those
/// in dead stack frames apart. Also: `VmLck` while loaded
/// and after release, and a run under `ulimit -l 64` without CAP_IPC_LOCK.
enum MemoryHygiene {
    struct Run {
        var opened: (before: Int, after: Int)
        /// VmLck once the work is done (KiB).
        var locked: Int
        var core: CoreScan
        var stderr: String
    }

    static func run(_ harness: Harness, _ report: Report) {
        guard harness.hasKeyring(report, check: "memory hygiene", target: "0 canaries") else { return }
        let count = harness.sizes.full ? 100 : 20
        let target = "0 in memory (control finds every one)"
        let runs: [String: Result<Run, any Error>] = Dictionary(
            uniqueKeysWithValues: ["control", "loaded", "released"].map { mode in
                (mode, Result { try measure(harness, mode: mode, count: count) })
            })
        guard case .success(let control)? = runs["control"] else {
            report.cannotRun(
                "keys and values in a core dump", target: target, reason: "control: \(runs["control"].map { "\($0)" } ?? "")")
            return
        }
        let expected = Set(CanarySet(generation: 2, count: count).secrets.keys)
        let controlText = "control found \(control.core.found.intersection(expected).count) of \(expected.count)"
        for (mode, label) in [
            ("loaded", "loaded, reloaded and written, never read"), ("released", "after the release of the last instance"),
        ] {
            let check = "keys and values of \(count) dictionaries planted by plistlib, \(label) (core scan)"
            switch runs[mode] {
            case .success(let run)?:
                let found = run.core.found
                report.add(
                    check, target: target,
                    measured: "\(found.count) of \(run.core.inMemory.count) canaries in memory; in dead stack "
                        + "frames: \(run.core.onStacks.values.reduce(0, +)) fragments; \(controlText)",
                    pass: found.isEmpty && control.core.found.isSuperset(of: expected),
                    note: found.isEmpty ? nil : "found: \(found.sorted().prefix(6).joined(separator: ", "))")
            case .failure(let error)?:
                report.add(check, target: target, measured: "could not measure", pass: false, note: "\(error)")
            case nil:
                break
            }
        }
        if case .success(let released)? = runs["released"] {
            report.add(
                "VmLck of the worker: before opening, while \(count) dictionaries are loaded, after their release",
                target: "rises, falls back",
                measured: "\(released.opened.before) / \(released.opened.after) / \(released.locked) KiB",
                pass: released.opened.after > released.opened.before && released.locked < released.opened.after)
        }
        limited(harness, report, count: count)
    }

    /// The worker under `ulimit -l 64` and no CAP_IPC_LOCK (root ignores the limit otherwise).
    static func limited(_ harness: Harness, _ report: Report, count: Int) {
        let check = "\(count) dictionaries under ulimit -l 64 (no CAP_IPC_LOCK)"
        let target = "works, VmLck ≤ 64 KiB; the fallback logged once; 0 canaries in the core"
        do {
            let run = try measure(harness, mode: "loaded", count: count, memoryLockLimit: 64)
            let warnings = run.stderr.components(separatedBy: "could not lock the memory holding secrets").count - 1
            report.add(
                check, target: target,
                measured: "VmLck \(run.opened.after) KiB, \(warnings) warning(s), \(run.core.found.count) canaries in the core",
                pass: run.opened.after <= 64 && warnings == 1 && run.core.found.isEmpty)
        } catch {
            report.add(check, target: target, measured: "could not measure", pass: false, note: "\(error)")
        }
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    static func measure(_ harness: Harness, mode: String, count: Int, memoryLockLimit: Int? = nil) throws -> Run {
        let app = harness.appID("hygiene")
        let fixture = try harness.fixture()
        let plant = { (canaries: CanarySet, tag: String) throws in
            for file in try canaries.blobs(in: harness.scratchFile("hygiene-\(mode)-\(tag)").path) {
                let item = try KeyringItem(dictionaryName: URL(fileURLWithPath: file).lastPathComponent, applicationID: app)
                try fixture.plant([UInt8](try Data(contentsOf: URL(fileURLWithPath: file))), for: item)
            }
        }
        let first = CanarySet(generation: 1, count: count)
        let second = CanarySet(generation: 2, count: count)
        try plant(first, "first")
        defer { for index in 0..<count { _ = try? SecureDictionary.delete(name: "scan-\(index)", applicationID: app) } }
        var command = [harness.executable, "worker", "hygiene", app, "\(count)", mode]
        if let memoryLockLimit {
            command =
                [
                    "/usr/bin/setpriv", "--bounding-set=-ipc_lock", "--", "/bin/sh", "-c",
                    "ulimit -l \(memoryLockLimit) && exec \"$0\" \"$@\"",
                ] + command
        }
        let worker = try LiveChild(command[0], Array(command.dropFirst()))
        guard let opened = worker.nextLine(timeout: .seconds(60))?.split(separator: " ").compactMap({ Int($0) }),
            opened.count == 3
        else {
            throw Failure(description: "the worker did not open: \(worker.finish(timeout: .seconds(5)).stderr.suffix(300))")
        }
        try plant(second, "second")
        try? worker.send("go")
        guard let ready = worker.nextLine(timeout: .seconds(120))?.split(separator: " ").compactMap({ Int($0) }), ready.count == 1
        else {
            throw Failure(description: "the worker did not finish: \(worker.finish(timeout: .seconds(5)).stderr.suffix(300))")
        }
        let core = try CoreScan.take(
            of: worker.pid, secrets: first.secrets.merging(second.secrets) { $1 })
        try? worker.send("done")
        let result = worker.finish(timeout: .seconds(30))
        guard result.succeeded else { throw Failure(description: "worker \(result.how): \(result.stderr.suffix(300))") }
        return Run(opened: (opened[1], opened[2]), locked: ready[0], core: core, stderr: result.stderr)
    }
}

extension Worker {
    /// `hygiene APP COUNT loaded|released|control`: the process scenario 9 scans, as
    /// `sd-test-writer scan` is the tests': `ScannedProcess.run`, whose "ready" line here is
    /// "ready VMLCK" (KiB).
    static func hygiene(_ arguments: [String]) {
        guard arguments.count == 3, let count = Int(arguments[1]) else { usage() }
        do {
            try ScannedProcess.run(
                app: arguments[0], count: count, mode: arguments[2], options: SecureDictionary.Options(timeout: .seconds(20)))
        } catch {
            print("error \(caseName(error))")
            exit(1)
        }
    }
}
