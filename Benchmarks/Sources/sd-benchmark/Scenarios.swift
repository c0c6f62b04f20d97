import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Synchronization

/// Sample counts and sizes of a run.
struct Plan {
    var quick: Bool
    /// Reads timed together in one sample of the cached-read scenario.
    var readBatch: Int
    var cachedReads: Sampling
    var writes: Sampling
    var bigWrites: Sampling
    var batches: Sampling
    var contentionProcesses: Int
    var contentionMutations: Int
    var contentionBaseline: Sampling
    var memoryRuns: Int
    /// Untimed pause before each sample of the idle-mutation scenario.
    var idle: Duration
    var idleWrites: Sampling
    var coldStarts: Sampling
    var growth: Sampling
    var growthEntries: [Int]
    var growthValueBytes: [Int]
    var stages: Sampling

    static let full = Plan(
        quick: false, readBatch: 1000,
        cachedReads: Sampling(warmup: 20, samples: 301),
        writes: Sampling(warmup: 5, samples: 201),
        bigWrites: Sampling(warmup: 3, samples: 101),
        batches: Sampling(warmup: 1, samples: 21),
        contentionProcesses: 4, contentionMutations: 100,
        contentionBaseline: Sampling(warmup: 5, samples: 201),
        memoryRuns: 5,
        idle: .milliseconds(2500), idleWrites: Sampling(warmup: 1, samples: 11),
        coldStarts: Sampling(warmup: 1, samples: 21),
        growth: Sampling(warmup: 3, samples: 51),
        growthEntries: [1, 10, 100, 1000, 10_000],
        growthValueBytes: [100, 1000, 10_000, 100_000, 1_000_000],
        stages: Sampling(warmup: 5, samples: 201))

    /// Every scenario, with few samples and small sizes: a smoke run for CI (about 30 s).
    /// Enough samples that each ratio is steady enough for the regression guard
    /// (`quick-guard.json`): with 5 writes, 1 idle write, 1 batch, 3 cold starts and 10
    /// contended mutations per process, one commit's `contention` ratio ranged from 0.33× to
    /// 3.19× over 13 runs on a busy machine (see Benchmarks/README.md).
    static let quick = Plan(
        quick: true, readBatch: 200,
        cachedReads: Sampling(warmup: 2, samples: 11),
        writes: Sampling(warmup: 2, samples: 31),
        bigWrites: Sampling(warmup: 1, samples: 11),
        batches: Sampling(warmup: 0, samples: 3),
        contentionProcesses: 4, contentionMutations: 25,
        contentionBaseline: Sampling(warmup: 1, samples: 21),
        memoryRuns: 1,
        idle: .milliseconds(2500), idleWrites: Sampling(warmup: 0, samples: 3),
        coldStarts: Sampling(warmup: 1, samples: 7),
        growth: Sampling(warmup: 1, samples: 3),
        growthEntries: [1, 100, 1000],
        growthValueBytes: [100, 10_000, 100_000],
        stages: Sampling(warmup: 1, samples: 5))
}

/// A `[String: Value]` behind a `Mutex`, in a class as the library keeps its cache: the
/// baseline of a cached read.
final class GuardedDictionary: Sendable {
    let entries: Mutex<[String: PropertyListValue]>

    init(_ entries: [String: PropertyListValue]) { self.entries = Mutex(entries) }

    func value(forKey key: String) -> PropertyListValue? {
        entries.withLock { $0[key] }
    }
}

/// The scenarios of the targets table, the growth series and the stage timings. Every
/// scenario uses its own SecureDictionary item and its own raw item, deletes both when done
/// (so the collection the daemon rewrites on every write stays small), and checks once,
/// untimed, that the library stored exactly the bytes the raw baseline stores.
final class Benchmark {
    static let applicationID = "io.github.securedictionary.benchmark"

    let plan: Plan
    let raw = RawLibSecret()
    let roundTrips: RoundTrips
    let options: SecureDictionary.Options
    var report: Report
    let log: (String) -> Void

    init(plan: Plan, log: @escaping (String) -> Void) throws {
        self.plan = plan
        self.log = log
        roundTrips = try RoundTrips()
        // A deadline well above any call here, so a busy machine gives slow figures, not errors.
        options = SecureDictionary.Options(timeout: .seconds(20))
        report = Report(mode: plan.quick ? "quick" : "full")
    }

    // MARK: Items

    func open(_ name: String) throws -> SecureDictionary {
        try SecureDictionary(name: name, applicationID: Self.applicationID, options: options)
    }

    static func rawService(_ name: String) -> String { "\(applicationID).raw.\(name)" }

    /// Removes the scenario's items (library and raw).
    func cleanUp(_ name: String) throws {
        _ = try SecureDictionary.delete(name: name, applicationID: Self.applicationID, options: options)
        try raw.clear(service: Self.rawService(name))
    }

    /// The bytes of the library's item, read over D-Bus, must equal `expected`.
    func verifyStored(_ name: String, _ expected: [UInt8]) throws {
        let item = try KeyringItem(dictionaryName: name, applicationID: Self.applicationID)
        guard let path = try roundTrips.search(item.attributes) else {
            throw BenchmarkError("the item of '\(name)' is not in the keyring")
        }
        let stored = try roundTrips.secret(path: path)
        guard stored == expected else {
            throw BenchmarkError(
                "'\(name)': the library stored \(stored.count) bytes that differ from the \(expected.count)-byte baseline blob")
        }
    }

    // MARK: Targets

    /// `dict["k"]` on a loaded 1,000-entry dictionary vs a Mutex-guarded `[String: Value]`.
    func cachedRead() throws {
        let name = "cached-read"
        let entries = Fixtures.mixedEntries(count: 1000)
        let dictionary = try open(name)
        try dictionary.update { $0.dictionary = entries }
        let guarded = GuardedDictionary(entries)
        var generator = SplitMix64(seed: 7)
        let keys = (0..<plan.readBatch).map { _ in Fixtures.key(Int(generator.next() % 1000)) }
        let (library, baseline) = try Timer.compare(
            plan.cachedReads,
            Side { for key in keys { blackHole(dictionary[key]) } },
            Side { for key in keys { blackHole(guarded.value(forKey: key)) } })
        let perRead = 1 / Double(keys.count)
        report.rows.append(
            TargetRow(
                id: "cached-read", operation: "cached read dict[\"k\"], 1,000 entries", unit: .seconds,
                library: library.scaled(by: perRead), baselineName: "Mutex<[String: Value]> lookup",
                baseline: baseline.scaled(by: perRead), kind: .atMost, target: 3,
                note: "per read; each sample times \(keys.count) reads of random keys; the library builds the "
                    + "caller's copy from its wiped memory (at most 3×)"))
        try cleanUp(name)
    }

    /// One `setValue` on an `count`-entry dictionary vs a raw lookup plus a raw store of the
    /// same blob: what a correct write needs, since every write checks the stored item first.
    func mutation(entries count: Int, target: Double) throws {
        let name = "mutation-\(count)"
        var entries = Fixtures.mixedEntries(count: count - 1)
        entries[Fixtures.mutatedKey] = Fixtures.alternatingValues(1)
        let writes = try compareWrites(
            name, entries: entries, count >= 10_000 ? plan.bigWrites : plan.writes, rawLookupFirst: true,
            change: Self.mutatedKeyChange)
        report.rows.append(
            TargetRow(
                id: "mutation-\(count)", operation: "one mutation, \(Format.integer(count))-entry dictionary",
                unit: .seconds, library: writes.library, baselineName: "raw lookup + raw store of the same blob",
                baseline: writes.baseline, kind: .atMost, target: target, blobBytes: writes.blobs[0].count))
        try cleanUp(name)
    }

    /// One `setValue` on a 10-entry dictionary after `plan.idle` without any keyring call, vs a
    /// raw store after the same pause: an application that writes now and then, so that
    /// nothing kept warm for a moment (connections, threads, cached lookups) helps.
    func idleMutation() throws {
        let name = "mutation-idle"
        var entries = Fixtures.mixedEntries(count: 9)
        entries[Fixtures.mutatedKey] = Fixtures.alternatingValues(1)
        let pause = { Thread.sleep(forTimeInterval: Timer.seconds(self.plan.idle)) }
        let writes = try compareWrites(
            name, entries: entries, plan.idleWrites, rawLookupFirst: true, pause: pause, change: Self.mutatedKeyChange)
        report.rows.append(
            TargetRow(
                id: "mutation-idle",
                operation: "one mutation after \(Format.duration(Timer.seconds(plan.idle))) idle, 10 entries",
                unit: .seconds, library: writes.library, baselineName: "raw lookup + raw store after the same pause",
                baseline: writes.baseline, kind: .atMost, target: 1.15, blobBytes: writes.blobs[0].count,
                note: "no keyring call for \(Format.duration(Timer.seconds(plan.idle))) before each sample (untimed), "
                    + "on either side"))
        try cleanUp(name)
    }

    /// The first init of a process (what a command-line tool pays on every run) vs the first
    /// raw lookup of a process: both connect to the bus and open an encrypted session first.
    func coldInit(worker: WorkerLauncher) throws {
        let name = "init-cold"
        let entries = Fixtures.mixedEntries(count: 1000)
        let blob = try Fixtures.blob(entries)
        try open(name).update { $0.dictionary = entries }
        try raw.store(blob, service: Self.rawService(name))
        func firstCall(_ mode: String) throws -> Double {
            let output = try worker.launch(["cold", mode, name]).finish()
            guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("cold ") }),
                let seconds = Double(line.dropFirst(5))
            else { throw BenchmarkError("the cold worker printed no result") }
            return seconds
        }
        var library: [Double] = []
        var baseline: [Double] = []
        let sampling = plan.coldStarts
        for index in 0..<(sampling.warmup + sampling.samples) {
            let order = index % 2 == 0 ? ["library", "raw"] : ["raw", "library"]
            for mode in order {
                let seconds = try firstCall(mode)
                guard index >= sampling.warmup else { continue }
                if mode == "library" { library.append(seconds) } else { baseline.append(seconds) }
            }
        }
        report.rows.append(
            TargetRow(
                id: "init-cold", operation: "first init in a new process, 1,000 entries", unit: .seconds,
                library: Stats(library), baselineName: "first raw lookup in a new process", baseline: Stats(baseline),
                kind: .atMost, target: 1.3, blobBytes: blob.count,
                note: "one new process per sample; both sides connect to the bus and negotiate an encrypted session"))
        try cleanUp(name)
    }

    /// Opening a 1,000-entry dictionary (load + decode, no other instance alive) vs a raw lookup.
    func initialLoad() throws {
        let name = "init-1000"
        let entries = Fixtures.mixedEntries(count: 1000)
        let blob = try Fixtures.blob(entries)
        let rawService = Self.rawService(name)
        try open(name).update { $0.dictionary = entries }  // the writing instance is gone after this line
        try verifyStored(name, blob)
        try raw.store(blob, service: rawService)
        let (library, baseline) = try compareInit(name, rawService: rawService, blob: blob, entries: entries.count, plan.writes)
        report.rows.append(
            TargetRow(
                id: "init-1000", operation: "init (load + decode), 1,000 entries", unit: .seconds,
                library: library, baselineName: "raw lookup of the same blob", baseline: baseline,
                kind: .atMost, target: 1.15, blobBytes: blob.count))
        try cleanUp(name)
    }

    /// `update { }` with 100 changes vs 100 separate `setValue` calls, on a 100-entry dictionary.
    func batchedUpdate() throws {
        let name = "update-100"
        let entries = Fixtures.mixedEntries(count: 100)
        let keys = entries.keys.sorted()
        let dictionary = try open(name)
        try dictionary.update { $0.dictionary = entries }
        var round = 0
        let (library, baseline) = try Timer.compare(
            plan.batches,
            Side {
                round += 1
                try dictionary.update { entries in
                    for key in keys { entries[key] = Fixtures.alternatingValues(round) }
                }
            },
            Side {
                round += 1
                for key in keys { try dictionary.setValue(Fixtures.alternatingValues(round), forKey: key) }
            })
        report.rows.append(
            TargetRow(
                id: "update-100", operation: "update { } with 100 changes, 100-entry dictionary", unit: .seconds,
                library: library, baselineName: "100 separate mutations", baseline: baseline,
                kind: .atLeast, target: 50, blobBytes: try Fixtures.blob(dictionary.snapshot).count))
        try cleanUp(name)
    }

    /// Init + reading 100 keys vs 100 lookups of one item per key (KeychainAccess, python keyring).
    func readManyKeys() throws {
        let name = "read-100"
        var generator = SplitMix64(seed: 100)
        var entries: [String: PropertyListValue] = [:]
        for index in 0..<100 { entries["token-\(index)"] = .string(Fixtures.token(32, &generator)) }
        let keys = entries.keys.sorted()
        try open(name).update { $0.dictionary = entries }
        for key in keys {
            try raw.store(Array(entries[key]!.stringValue!.utf8), service: Self.rawService("\(name).\(key)"))
        }
        var holder: SecureDictionary?
        var readsOnly: [Double] = []
        let (library, baseline) = try Timer.compare(
            plan.batches,
            Side(
                prepare: { holder = nil },
                run: {
                    let dictionary = try self.open(name)
                    for key in keys { blackHole(dictionary[key]?.stringValue) }
                    holder = dictionary
                }),
            Side {
                for key in keys {
                    guard let bytes = try self.raw.lookup(service: Self.rawService("\(name).\(key)")) else {
                        throw BenchmarkError("a per-key item is missing")
                    }
                    blackHole(String(decoding: bytes, as: UTF8.self))
                }
            })
        if let holder {
            for _ in 0..<11 {
                readsOnly.append(Timer.time { for key in keys { blackHole(holder[key]?.stringValue) } })
            }
        }
        holder = nil
        report.rows.append(
            TargetRow(
                id: "read-100", operation: "init + read 100 keys vs one item per key", unit: .seconds,
                library: library, baselineName: "100 lookups, one item per key", baseline: baseline,
                kind: .atLeast, target: 50, blobBytes: try Fixtures.blob(entries).count,
                note: "the 100 reads alone, after init: \(Format.duration(Stats(readsOnly).median))"))
        for key in keys { try raw.clear(service: Self.rawService("\(name).\(key)")) }
        try cleanUp(name)
    }

    /// `processes` processes each making `mutations` setValue calls on their own key of one
    /// dictionary: first all at once (free for all), then taking turns, so that every
    /// mutation follows another process's write and must re-read the item.
    func contention(worker: WorkerLauncher) throws {
        let name = "contention"
        var entries = Fixtures.mixedEntries(count: 100)
        let processes = plan.contentionProcesses
        let mutations = plan.contentionMutations
        for index in 0..<processes { entries[Worker.contendedKey(index)] = Fixtures.alternatingValues(1) }
        try open(name).update { $0.dictionary = entries }
        // The baseline: raw lookup + raw store of the same blob, half before the workers run
        // and half after, so both sides see the machine in the same state.
        let rawService = Self.rawService(name)
        let blob = try Fixtures.blob(entries)
        try raw.store(blob, service: rawService)
        let rawRoundTrip = Side {
            try self.rawLookup(rawService, expecting: blob.count)
            try self.raw.store(blob, service: rawService)
        }
        var half = plan.contentionBaseline
        half.samples = (half.samples + 1) / 2
        let before = try Timer.measure(half, rawRoundTrip)

        // Free for all.
        let freeForAll = try runWorkers(worker, processes: processes) { index, start in
            ["contend", name, String(index), String(mutations), String(start)]
        }
        try checkLastWrites(name, processes: processes, mutations: mutations)
        let completions = freeForAll.flatMap { index, times in times.map { (time: $0.end, process: index) } }
            .sorted { $0.time < $1.time }
        // Writers are serialised, so the time between two consecutive completions is what one
        // mutation cost (plus any time the lock stood free). A completion by another process
        // than the previous one is a mutation that had to re-read the item first.
        var intervals: [Double] = []
        var rereads = 0
        for index in 1..<completions.count {
            intervals.append(Double(completions[index].time - completions[index - 1].time) / 1e9)
            if completions[index].process != completions[index - 1].process { rereads += 1 }
        }
        let wall = Double(completions.last!.time - completions.first!.time) / 1e9
        let latency = Stats(freeForAll.flatMap { _, times in times.map { Double($0.end - $0.start) / 1e9 } })

        // Taking turns: a token goes round the processes through FIFOs.
        let ring = try runWorkers(worker, processes: processes) { index, start in
            ["ring", name, String(index), String(mutations), String(start), String(processes)]
        }
        try checkLastWrites(name, processes: processes, mutations: mutations)
        let turns = Stats(ring.flatMap { _, times in times.map { Double($0.end - $0.start) / 1e9 } })

        guard try Fixtures.blob(open(name).snapshot).count == blob.count else {
            throw BenchmarkError("the contended dictionary changed size")
        }
        let after = try Timer.measure(half, rawRoundTrip)
        let baseline = Stats(before.samples + after.samples)
        report.rows.append(
            TargetRow(
                id: "contention", operation: "\(processes) processes × \(mutations) mutations at once, per mutation",
                unit: .seconds, library: Stats(intervals), baselineName: "raw lookup + raw store", baseline: baseline,
                kind: .atMost, target: 1.15, blobBytes: blob.count,
                note: "time between consecutive completions, all processes (\(Format.duration(wall / Double(intervals.count))) "
                    + "per mutation over the whole run); \(rereads) of \(intervals.count) mutations came right after "
                    + "another process's write (the bus lock serves waiters in arrival order); "
                    + "one setValue as its caller sees it: median \(Format.duration(latency.median)), "
                    + "p99 \(Format.duration(latency.p99)), max \(Format.duration(latency.max))"))
        report.rows.append(
            TargetRow(
                id: "contention-turns", operation: "\(processes) processes × \(mutations) mutations taking turns, per mutation",
                unit: .seconds, library: turns, baselineName: "raw lookup + raw store", baseline: baseline,
                kind: .atMost, target: 1.15, blobBytes: blob.count,
                note: "the processes pass a token round, so every setValue follows another process's write and re-reads "
                    + "the item; each setValue timed by its process"))
        try cleanUp(name)
    }

    /// Starts `processes` workers that begin together 1.5 s from now; their "t START END" lines.
    private func runWorkers(
        _ worker: WorkerLauncher, processes: Int, _ arguments: (Int, UInt64) -> [String]
    ) throws -> [(Int, [(start: UInt64, end: UInt64)])] {
        let start = Timer.monotonicNanoseconds() + 1_500_000_000
        let launched = try (0..<processes).map { index in try worker.launch(arguments(index, start)) }
        return try launched.enumerated().map { index, process in
            let output = try process.finish()
            let times = try output.split(separator: "\n").filter { $0.hasPrefix("t ") }.map { line in
                let fields = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
                guard fields.count == 2 else { throw BenchmarkError("bad worker output") }
                return (start: fields[0], end: fields[1])
            }
            guard times.count == plan.contentionMutations else {
                throw BenchmarkError("worker \(index) reported \(times.count) of \(plan.contentionMutations) mutations")
            }
            return (index, times)
        }
    }

    /// Nothing lost: every worker's key holds its last value.
    private func checkLastWrites(_ name: String, processes: Int, mutations: Int) throws {
        let check = try open(name)
        for index in 0..<processes where check[Worker.contendedKey(index)] != Fixtures.alternatingValues(mutations - 1) {
            throw BenchmarkError("worker \(index)'s last write is missing")
        }
    }

    /// Peak memory above the idle process while writing a ~1 MiB dictionary, in fresh processes.
    func peakMemory(worker: WorkerLauncher) throws {
        var library: [Double] = []
        var rawPeaks: [Double] = []
        var blobBytes = 0
        for run in 0..<plan.memoryRuns {
            for mode in ["library", "raw"] {
                let name = "memory-\(run)"
                let output = try worker.launch(["memory", mode, name]).finish()
                guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("memory ") }) else {
                    throw BenchmarkError("the memory worker printed no result")
                }
                let fields = line.split(separator: " ").compactMap { Int($0) }
                guard fields.count == 3 else { throw BenchmarkError("bad memory worker output") }
                let (_, peak, blob) = (fields[0], fields[1], fields[2])
                blobBytes = blob
                if mode == "library" { library.append(Double(peak)) } else { rawPeaks.append(Double(peak)) }
                try cleanUp(name)
            }
        }
        // The target: no more than raw libsecret's own peak for the same blob plus one
        // copy of the blob (the encoded buffer the library must hold while it writes).
        let allowed = Stats(rawPeaks.map { $0 + Double(blobBytes) })
        let libraryStats = Stats(library)
        report.rows.append(
            TargetRow(
                id: "memory-1mib", operation: "peak memory writing a 1 MiB dictionary", unit: .bytes,
                library: libraryStats, baselineName: "raw store's peak + 1 × blob", baseline: allowed, kind: .atMost,
                target: 1, blobBytes: blobBytes,
                note: "peak RSS above the idle process (VmHWM after a reset, fresh process); SecureDictionary "
                    + "\(Format.ratio(libraryStats.median / Double(blobBytes)))× the blob, raw store of the same blob "
                    + "\(Format.bytes(Stats(rawPeaks).median)) = \(Format.ratio(Stats(rawPeaks).median / Double(blobBytes)))× the blob"
            ))
    }

    // MARK: Growth

    func growth() throws {
        for count in plan.growthEntries {
            var entries = Fixtures.mixedEntries(count: max(0, count - 1))
            entries[Fixtures.mutatedKey] = Fixtures.alternatingValues(1)
            try growthPoint(series: .entries, parameter: count, entries: entries) { sample in
                [(Fixtures.mutatedKey, Fixtures.alternatingValues(sample))]
            }
        }
        for size in plan.growthValueBytes {
            let values = (0..<2).map { PropertyListValue.data(Fixtures.bytes(size, seed: UInt64(size + $0))) }
            try growthPoint(series: .valueBytes, parameter: size, entries: ["value": values[1]]) { sample in
                [("value", values[sample % 2])]
            }
        }
    }

    private func growthPoint(
        series: GrowthPoint.Series, parameter: Int, entries initial: [String: PropertyListValue],
        change: @escaping (Int) -> [(String, PropertyListValue)]
    ) throws {
        let name = "growth-\(series.rawValue)-\(parameter)"
        log("  growth \(series.rawValue) \(parameter)")
        // No live instance once it returns: each init below loads.
        let writes = try compareWrites(name, entries: initial, plan.growth, rawLookupFirst: false, change: change)
        let rawService = Self.rawService(name)
        try raw.store(writes.last, service: rawService)
        let (load, rawLookup) = try compareInit(
            name, rawService: rawService, blob: writes.last, entries: writes.entries, plan.growth)
        report.growth.append(
            GrowthPoint(
                series: series, parameter: parameter, blobBytes: writes.last.count,
                mutation: writes.library, rawStore: writes.baseline, load: load, rawLookup: rawLookup))
        try cleanUp(name)
    }

    /// What `compareWrites` measured, and what it left in the keyring.
    struct Writes {
        var library: Stats
        var baseline: Stats
        /// The item's bytes after an even and after an odd sample.
        var blobs: [[UInt8]]
        /// The bytes the library stored last (checked).
        var last: [UInt8]
        /// How many entries the dictionary holds.
        var entries: Int
    }

    /// The key a mutation scenario changes, to one of its two alternating values.
    private static func mutatedKeyChange(_ sample: Int) -> [(String, PropertyListValue)] {
        [(Fixtures.mutatedKey, Fixtures.alternatingValues(sample))]
    }

    /// Times a write that sets the entries `change(sample)` on a dictionary of `entries` (which
    /// holds `change(1)` already; with `setValue`, or all in one `update { }` when
    /// `inOneUpdate`) against a raw store of the same blob, preceded, when
    /// `rawLookupFirst`, by a raw lookup that must find the blob stored before (what a
    /// correct write needs, since every write checks the stored item first); `pause` runs
    /// untimed before every sample of either side. Checks the bytes the library stored; its
    /// instance is gone when this returns.
    func compareWrites(
        _ name: String, entries initial: [String: PropertyListValue], _ sampling: Sampling, rawLookupFirst: Bool,
        pause: @escaping () -> Void = {}, inOneUpdate: Bool = false,
        change: @escaping (Int) -> [(String, PropertyListValue)]
    ) throws -> Writes {
        var entries = initial
        let blobs = try (0..<2).map { sample -> [UInt8] in
            for (key, value) in change(sample) { entries[key] = value }
            return try Fixtures.blob(entries)
        }
        let rawService = Self.rawService(name)
        let dictionary = try open(name)
        try dictionary.update { $0.dictionary = entries }
        try raw.store(blobs[1], service: rawService)
        var librarySample = 0
        var rawSample = 0
        let (library, baseline) = try Timer.compare(
            sampling,
            Side(
                prepare: pause,
                run: {
                    let changes = change(librarySample)
                    if inOneUpdate {
                        try dictionary.update { entries in
                            for (key, value) in changes { entries[key] = value }
                        }
                    } else {
                        for (key, value) in changes { try dictionary.setValue(value, forKey: key) }
                    }
                    librarySample += 1
                }),
            Side(
                prepare: pause,
                run: {
                    if rawLookupFirst { try self.rawLookup(rawService, expecting: blobs[(rawSample + 1) % 2].count) }
                    try self.raw.store(blobs[rawSample % 2], service: rawService)
                    rawSample += 1
                }))
        let last = blobs[(librarySample - 1) % 2]
        try verifyStored(name, last)
        return Writes(library: library, baseline: baseline, blobs: blobs, last: last, entries: entries.count)
    }

    /// A raw lookup of `rawService` that must find `length` bytes.
    private func rawLookup(_ rawService: String, expecting length: Int) throws {
        guard try raw.lookupLength(service: rawService) == length else {
            throw BenchmarkError("raw lookup returned another blob")
        }
    }

    /// Times opening a new instance (registry, load, decode; no other instance alive) against
    /// a raw lookup of the same blob, and checks that every init loaded `entries` entries.
    private func compareInit(
        _ name: String, rawService: String, blob: [UInt8], entries: Int, _ sampling: Sampling
    ) throws -> (library: Stats, baseline: Stats) {
        var holder: SecureDictionary?
        let result = try Timer.compare(
            sampling,
            Side(prepare: { holder = nil }, run: { holder = try self.open(name) }),
            Side { try self.rawLookup(rawService, expecting: blob.count) })
        guard holder?.count == entries else { throw BenchmarkError("init loaded \(holder?.count ?? -1) entries") }
        return result
    }

    // MARK: Stages

    /// The parts a mutation and a load are made of, timed one by one.
    func stages() throws {
        for count in [10, 1000, 10_000] {
            let entries = Fixtures.mixedEntries(count: count)
            let blob = try BinaryPropertyListCoding.encode(entries)
            let encode = try Timer.measure(plan.stages, Side { blackHole(try BinaryPropertyListCoding.encode(entries)) })
            let decode = try Timer.measure(plan.stages, Side { blackHole(try BinaryPropertyListCoding.decode(blob)) })
            addStage(
                "encode \(Format.integer(count)) entries", encode,
                note: "BinaryPropertyListCoding.encode, \(Format.bytes(Double(blob.count)))")
            addStage("decode \(Format.integer(count)) entries", decode, note: "BinaryPropertyListCoding.decode")
        }

        let name = "stages"
        let rawService = Self.rawService(name)
        let blob = try Fixtures.blob(Fixtures.mixedEntries(count: 1000))
        try raw.store(blob, service: rawService)
        try measureStage(
            "D-Bus ReadAlias(default)", note: "1 round trip: resolving the collection alias",
            Side { blackHole(try self.roundTrips.readAlias()) })
        let search = RoundTrips.rawSearchAttributes(service: rawService)
        try measureStage("D-Bus SearchItems", note: "1 round trip", Side { blackHole(try self.roundTrips.search(search)) })
        guard let path = try roundTrips.search(search) else { throw BenchmarkError("the stages item is missing") }
        try measureStage(
            "D-Bus GetSecrets, 1,000 entries", note: "1 round trip, \(Format.bytes(Double(blob.count))), decrypted",
            Side {
                guard try self.roundTrips.secretLength(path: path) == blob.count else {
                    throw BenchmarkError("wrong secret")
                }
            })
        try measureStage(
            "D-Bus CreateItem (replace), 1,000 entries", note: "= raw store; the daemon rewrites the keyring file",
            Side { try self.raw.store(blob, service: rawService) })

        try measureStage(
            "D-Bus RequestName + ReleaseName",
            note: "2 round trips to dbus-daemon: the cross-process writer lock, per write",
            Side { try self.roundTrips.requestAndReleaseName() })
        let queue = DispatchQueue(label: "probe")
        try measureStage(
            "thread hop (DispatchQueue.async + semaphore)", note: "the library runs every keyring call on its deadline lane",
            Side {
                let done = DispatchSemaphore(value: 0)
                queue.async { done.signal() }
                done.wait()
            })

        try sessionVerification()

        try open(name).update { $0.dictionary = Fixtures.mixedEntries(count: 1000) }
        var holder: SecureDictionary?
        var reloaded: SecureDictionary?
        let (initial, reload) = try Timer.compare(
            plan.stages,
            Side(
                prepare: {
                    holder = nil
                    reloaded = nil
                }, run: { holder = try self.open(name) }),
            Side(
                prepare: {
                    holder = nil
                    reloaded = try self.open(name)
                }, run: { try reloaded!.reload() }))
        blackHole(holder)  // kept between runs only so that no release is timed
        holder = nil
        reloaded = nil
        addStage("init, 1,000 entries", initial, note: "a new instance: registry, load, decode")
        addStage("reload(), 1,000 entries", reload, note: "load + decode of an open instance (alternating with init)")
        try cleanUp(name)
    }

    /// Adds a line to "where the time goes".
    private func addStage(_ name: String, _ stats: Stats, note: String) {
        report.stages.append(Stage(name: name, stats: stats, note: note))
    }

    /// Times `side` on its own (`plan.stages` samples) and adds it as a stage.
    private func measureStage(_ name: String, note: String, _ side: Side) throws {
        addStage(name, try Timer.measure(plan.stages, side), note: note)
    }
}

extension Benchmark {
    /// What the first write of a session costs: a one-key write on a new store (a
    /// new session, proven by the load of the item when it opens, so not read back) vs the
    /// same write on a store whose session was proven by a write. Before a load could prove
    /// a session, the first write read the item once more and read it back after.
    func sessionVerification() throws {
        let name = "stages-verify"
        try open(name).update { $0.dictionary = Fixtures.mixedEntries(count: 10) }
        func openOnNewStore() throws -> SecureDictionary {
            var options = self.options
            options.store = SecretServiceStore()
            return try SecureDictionary(name: name, applicationID: Self.applicationID, options: options)
        }
        var round = 0
        func write(_ dictionary: SecureDictionary) throws {
            round += 1
            try dictionary.setValue("value \(round)", forKey: "verify")
        }
        var first: SecureDictionary?
        let later = try openOnNewStore()
        try write(later)  // its session is verified from here on
        let (unverified, verified) = try Timer.compare(
            plan.stages,
            Side(prepare: { first = try openOnNewStore() }, run: { try write(first!) }),
            Side { try write(later) })
        first = nil
        addStage(
            "first write of a session, 10 entries", unverified,
            note: "new session, proven by its load: check + store, no read-back")
        addStage(
            "later write of a session, 10 entries", verified, note: "check + store (alternating with the first write)")
        try cleanUp(name)
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
