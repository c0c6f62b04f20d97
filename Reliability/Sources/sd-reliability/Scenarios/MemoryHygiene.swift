import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Scenario 9: after the release of the last instance, no fragment of a
/// secret is left in the memory of the process: a core taken with gdb's `gcore` is searched
/// for a 16-byte slice from the middle of a 96-byte canary built at run time.
/// Each dictionary writes its canary, is released and opened again (so both the write and
/// the load path hold it), then is released. A positive control (the same run
/// keeping the dictionaries loaded) must find the canaries, or the measurement is void.
/// Each fragment is placed with ``CoreLayout``: the target is 0 in the process's memory;
/// residue in dead stack frames and saved CPU registers is reported beside it.
enum MemoryHygiene {
    static let canaryLength = 96
    static let slice = 40..<56

    struct Measurement {
        var fragments: Int
        var whole: Int
        /// Whole canaries right after a bplist data-object header (0x4F 0x10 0x60): copies
        /// that sit in an encoded blob, not in a `Data` of the cache.
        var inBlob = 0
        /// How many of the canaries have at least one fragment left.
        var canariesFound = 0
        /// Fragments in dead stack frames and in saved CPU registers; the rest are in memory.
        var onStacks = 0, inRegisters = 0
        var inMemory: Int { fragments - onStacks - inRegisters }
        var error: String?
    }

    static func run(_ harness: Harness, _ report: Report) {
        guard harness.hasKeyring(report, check: "memory hygiene", target: "0 fragments") else { return }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gcore") else {
            report.cannotRun("memory hygiene", target: "0 fragments", reason: "gdb's gcore is missing (apt-get install gdb)")
            return
        }
        // Data: many dictionaries in one process, one canary each, so that a copy left
        // behind by a race in some of the writes shows up in one core.
        let count = harness.sizes.full ? 400 : 100
        for mode in ["data", "string"] {
            let control = measure(harness, mode: mode, end: "control", count: count)
            let controlText =
                control.error.map { "control failed: \($0)" }
                ?? "control found \(control.canariesFound) of \(count) (\(control.inBlob) copies in a blob)"
            for end in ["deinit"] {
                let label = "\(mode == "data" ? "Data" : "String") value, release of the last instance, \(count) dictionaries"
                let result = measure(harness, mode: mode, end: end, count: count)
                if let error = result.error ?? control.error {
                    report.add(
                        label, target: mode == "data" ? "0 fragments (control > 0)" : "tracked (control > 0)",
                        measured: "could not measure", pass: false, note: error)
                    continue
                }
                if control.fragments == 0 {
                    report.add(
                        label, target: "control finds the canary", measured: "control found 0: the measurement is void",
                        pass: false)
                    continue
                }
                let measured =
                    "\(result.inMemory) fragments in memory (\(result.inBlob) inside an encoded blob); residue that "
                    + "no library can wipe: \(result.onStacks) in dead stack frames, \(result.inRegisters) in saved CPU registers "
                    + "(\(result.canariesFound) of \(count) canaries); \(controlText)"
                if mode == "data" {
                    report.add(
                        label, target: "0 fragments in memory (control > 0)", measured: measured,
                        pass: result.inMemory == 0,
                        note: result.fragments == 0
                            ? nil
                            : "fragments left: \(result.inBlob) sit right after a bplist data header, i.e. in an encoded blob freed unwiped"
                    )
                } else {
                    report.tracked("\(label): what Swift cannot wipe", measured: measured)
                }
            }
        }
    }

    static func measure(_ harness: Harness, mode: String, end: String, count: Int) -> Measurement {
        let canaryFile = harness.scratchFile("canary-\(mode)-\(end)")
        let corePrefix = harness.scratchFile("core-\(mode)-\(end)")
        defer { try? FileManager.default.removeItem(at: canaryFile) }
        let worker: LiveProcess
        do {
            worker = try harness.liveWorker(["hygiene", mode, end, harness.appID("hygiene"), canaryFile.path, "\(count)"])
        } catch {
            return Measurement(fragments: 0, whole: 0, error: "cannot start the worker: \(error)")
        }
        guard let line = worker.readLine(timeout: .seconds(30)), line == "ready" else {
            let result = worker.finish(timeout: .seconds(5))
            return Measurement(
                fragments: 0, whole: 0, error: "worker \(result.how): \(result.text.suffix(200)) \(result.stderr.suffix(300))")
        }
        let pid = worker.pid
        let gcore = Subprocess.run("/usr/bin/gcore", ["-o", corePrefix.path, "\(pid)"], timeout: .seconds(120))
        worker.send("done")
        _ = worker.finish(timeout: .seconds(10))
        let coreFile = URL(fileURLWithPath: "\(corePrefix.path).\(pid)")
        defer { try? FileManager.default.removeItem(at: coreFile) }
        guard let canaries = try? [UInt8](Data(contentsOf: canaryFile)), canaries.count == canaryLength * count else {
            return Measurement(fragments: 0, whole: 0, error: "no canary file")
        }
        guard let core = try? Data(contentsOf: coreFile, options: .alwaysMapped) else {
            return Measurement(fragments: 0, whole: 0, error: "gcore made no core: \(gcore.how) \(gcore.stderr.suffix(300))")
        }
        var measurement = Measurement(fragments: 0, whole: 0)
        guard let layout = CoreLayout(core: coreFile) else {
            return Measurement(fragments: 0, whole: 0, error: "gdb could not read the core's layout")
        }
        let header: [UInt8] = [mode == "data" ? 0x4F : 0x5F, 0x10, UInt8(canaryLength)]
        core.withUnsafeBytes { memory in
            for index in 0..<count {
                let canary = Array(canaries[(index * canaryLength)..<((index + 1) * canaryLength)])
                // One pass per canary for the slice; whole copies and blob headers are
                // checked around each hit.
                let hits = positions(of: Array(canary[slice]), in: memory)
                measurement.fragments += hits.count
                if !hits.isEmpty { measurement.canariesFound += 1 }
                for hit in hits {
                    switch layout.place(ofOffset: hit) {
                    case .stack: measurement.onStacks += 1
                    case .registers: measurement.inRegisters += 1
                    case .memory: break
                    }
                    let start = hit - slice.lowerBound
                    guard start >= 0, start + canaryLength <= memory.count,
                        memcmp(memory.baseAddress! + start, canary, canaryLength) == 0
                    else { continue }
                    measurement.whole += 1
                    if start >= 3, memcmp(memory.baseAddress! + start - 3, header, 3) == 0 { measurement.inBlob += 1 }
                }
            }
        }
        return measurement
    }
}

extension Worker {
    /// `hygiene data|string forget|deinit|control APP CANARY_FILE`: builds a random canary,
    /// writes it to CANARY_FILE for the runner, stores it as the only value of a dictionary in
    /// the real keyring, drops its own copies, then forgets (or releases the last instance,
    /// or keeps it loaded: the control), says "ready" and waits for the core to be taken.
    static func hygiene(_ arguments: [String]) {
        guard arguments.count == 5, let count = Int(arguments[4]) else { usage() }
        let (mode, end, app, canaryPath) = (arguments[0], arguments[1], arguments[2], arguments[3])
        var kept: [SecureDictionary] = []
        let file = Glibc.open(canaryPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        do {
            for index in 0..<count {
                if let dictionary = try hygieneStore(mode: mode, end: end, app: app, name: "hygiene-\(index)", canaryFile: file) {
                    kept.append(dictionary)
                }
            }
        } catch {
            print("error \(caseName(error))")
            exit(1)
        }
        close(file)
        print("ready")
        fflush(nil)
        _ = readLine()
        withExtendedLifetime(kept) {}
        for index in 0..<count {
            _ = try? SecureDictionary.delete(name: "hygiene-\(index)", applicationID: app, options: .init(collection: .session))
        }
    }

    /// Everything that touches one canary, in a frame of its own so that nothing of it
    /// outlives the call but what the library holds.
    @inline(never)
    static func hygieneStore(mode: String, end: String, app: String, name: String, canaryFile: Int32) throws -> SecureDictionary?
    {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var canary = [UInt8](repeating: 0, count: MemoryHygiene.canaryLength)
        canary.withUnsafeMutableBytes { raw in
            for index in raw.indices { raw[index] = alphabet[Int.random(in: 0..<alphabet.count)] }
            _ = write(canaryFile, raw.baseAddress, raw.count)
        }
        // gnome-keyring's in-memory collection: the same library path, without rewriting the
        // login keyring file hundreds of times.
        let options = SecureDictionary.Options(collection: .session, store: SecretServiceStore.shared)
        var dictionary: SecureDictionary? = try SecureDictionary(name: name, applicationID: app, options: options)
        // 120 entries besides the canary, so that the canary passes through a dictionary of
        // some size (once also through the encode-ahead of large dictionaries, since removed).
        try dictionary!.update { entries in
            for index in 0..<120 { entries["filler-\(index)"] = .integer(index) }
        }
        try dictionary!.setValue("not a secret", forKey: "other")
        if mode == "data" {
            var value = Data(canary)
            try dictionary!.setValue(.data(value), forKey: "canary")
            value = Data()
        } else {
            var value = String(decoding: canary, as: UTF8.self)
            try dictionary!.setValue(.string(value), forKey: "canary")
            value = ""
        }
        canary.withUnsafeMutableBytes { explicit_bzero($0.baseAddress!, $0.count) }
        // A load too: the blob read from the keyring holds the canary as well.
        dictionary = nil
        dictionary = try SecureDictionary(name: name, applicationID: app, options: options)
        switch end {
        case "deinit":
            dictionary = nil
            return nil
        default:
            _ = dictionary!["canary"]
            return dictionary
        }
    }
}
