import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// Sample counts of a `provider-latency` run.
struct LatencyPlan {
    var quick: Bool
    var cachedReads: Sampling
    var opens: Sampling
    var writes: Sampling
    var commandLine: Sampling

    /// At least 100 samples per cell, so that p99 is one of the slowest samples, not the slowest.
    static let full = LatencyPlan(
        quick: false, cachedReads: Sampling(warmup: 100, samples: 1001), opens: Sampling(warmup: 5, samples: 201),
        writes: Sampling(warmup: 5, samples: 101), commandLine: Sampling(warmup: 2, samples: 101))

    /// Enough for a median that a tenfold slowdown cannot hide in (CI's provider guard).
    static let quick = LatencyPlan(
        quick: true, cachedReads: Sampling(warmup: 20, samples: 201), opens: Sampling(warmup: 1, samples: 7),
        writes: Sampling(warmup: 1, samples: 7), commandLine: Sampling(warmup: 1, samples: 5))
}

/// Order statistics as written to a latency run's JSON and read back for the table.
struct Figure: Codable {
    var count: Int
    var median: Double
    var p99: Double
    var min: Double
    var max: Double

    init(_ stats: Stats) {
        count = stats.count
        median = stats.median
        p99 = stats.p99
        min = stats.min
        max = stats.max
    }
}

/// One call on one store: SecureDictionary's figure, and raw libsecret's on the same provider.
struct LatencyCell: Codable {
    var id: String
    var operation: String
    var library: Figure
    var rawOperation: String?
    var raw: Figure?
    /// Whole processes that failed and were run again (KWallet 5.103's one new session in 200).
    var failedRuns: Int = 0
}

/// What one `provider-latency` run writes: one provider (or file store) of one release.
struct LatencyRun: Codable {
    /// "Debian 12", "Debian 13".
    var release: String
    /// "gnome-keyring", "kwallet", "keepassxc", or "-" for a file store without one.
    var provider: String
    /// The provider's (or the portal's) package version.
    var version: String
    var store: MeasuredStore
    var mode: String
    var machine: Machine
    var cells: [LatencyCell]
    var durationSeconds: Double

    /// The key of this run in the quick baseline, e.g. "Debian 12/kwallet/keyring".
    var key: String { "\(release)/\(provider)/\(store.rawValue)" }
}

/// `sd-benchmark provider-latency`: times the calls of the per-provider latency table on the
/// store and provider of this session, SecureDictionary beside raw libsecret.
final class ProviderLatency {
    static let usage = """
        usage: sd-benchmark provider-latency --store keyring|credential|passphrase|portal
                                             --release NAME --provider NAME --version TEXT --json FILE [--quick]

        Times, on the store given (the keyring: the Secret Service of this session), open
        (load) of a 1,000-entry dictionary, a cached read, one write to a 10-entry and a
        1,000-entry dictionary, an update of 5 keys, a delete and `secure-dict read`
        (a whole process; SD_BENCHMARK_CLI names the tool), each beside raw libsecret on
        the same provider for the keyring, and writes the figures as JSON. scripts/benchmark
        --providers runs it once per provider and store, each in its own private session.
        """

    static let applicationID = "io.github.securedictionary.benchmark.latency"

    let plan: LatencyPlan
    let measured: MeasuredStore
    let store: any KeyringStore
    let cliOptions: [String]
    let cliInput: String
    let options: SecureDictionary.Options
    let raw = RawLibSecret()
    var cells: [LatencyCell] = []
    private var openedRoundTrips: RoundTrips?

    init(plan: LatencyPlan, store measured: MeasuredStore, scratch: String) throws {
        self.plan = plan
        self.measured = measured
        let made = try measured.make(scratch: scratch)
        store = made.store
        cliOptions = made.cliOptions
        cliInput = made.cliInput
        // A deadline well above any call here, so a busy machine gives slow figures, not errors.
        options = SecureDictionary.Options(timeout: .seconds(20), store: store)
    }

    static func run(_ arguments: [String]) throws -> Int32 {
        let flags = try Flags(
            arguments, values: ["--store", "--release", "--provider", "--version", "--json"], switches: ["--quick"])
        if flags.help {
            print(usage)
            return 0
        }
        let (values, quick) = (flags.values, flags.switches.contains("--quick"))
        guard let storeName = values["--store"], let store = MeasuredStore(rawValue: storeName) else {
            throw UsageError("--store must be one of \(MeasuredStore.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let json = values["--json"] else { throw UsageError("--json is required") }
        guard ProcessInfo.processInfo.environment["SD_PRIVATE_KEYRING"] == "1" else {
            throw BenchmarkError("not inside a private keyring: run scripts/benchmark --providers")
        }
        let loadAtStart = Machine.loadAverage()
        let started = Timer.clock.now
        let scratch = NSTemporaryDirectory() + "sd-benchmark-latency-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let latency = try ProviderLatency(plan: quick ? .quick : .full, store: store, scratch: scratch)
        defer { store.forget(latency.store) }
        try latency.measureAll()
        let result = LatencyRun(
            release: values["--release"] ?? "this machine", provider: values["--provider"] ?? "-",
            version: values["--version"] ?? "unknown", store: store, mode: quick ? "quick" : "full",
            machine: Machine.current(loadAtStart: loadAtStart), cells: latency.cells,
            durationSeconds: Timer.seconds(started.duration(to: Timer.clock.now)))
        try Files.writeJSON(result, to: json, endingWithNewline: true)
        for cell in result.cells {
            let raw = cell.raw.map { " | raw \(Format.duration($0.median)) / \(Format.duration($0.p99))" } ?? ""
            standardError(
                "sd-benchmark: \(result.key) \(cell.id): \(Format.duration(cell.library.median)) / "
                    + "\(Format.duration(cell.library.p99)) (median / p99, \(cell.library.count) samples)\(raw)")
        }
        return 0
    }

    func measureAll() throws {
        try openCell()
        try cachedReadCell()
        try writeCell(entries: 10)
        try writeCell(entries: 1000)
        try updateCell()
        try deleteCell()
        try commandLineCell()
    }

    // MARK: Cells

    private func open(_ name: String) throws -> SecureDictionary {
        try SecureDictionary(name: name, applicationID: Self.applicationID, options: options)
    }

    private static func rawService(_ name: String) -> String { "\(applicationID).raw.\(name)" }

    /// Times the library's side, and raw libsecret's alternating with it on the keyring.
    private func time(_ sampling: Sampling, _ library: Side, raw: Side) throws -> (Stats, Stats?) {
        guard measured.hasRawBaseline else { return (try Timer.measure(sampling, library), nil) }
        let (ours, theirs) = try Timer.compare(sampling, library, raw)
        return (ours, theirs)
    }

    private func add(_ id: String, _ operation: String, _ figures: (Stats, Stats?), raw rawOperation: String) {
        cells.append(
            LatencyCell(
                id: id, operation: operation, library: Figure(figures.0),
                rawOperation: figures.1 == nil ? nil : rawOperation, raw: figures.1.map(Figure.init)))
    }

    private func cleanUp(_ name: String) throws {
        _ = try SecureDictionary.delete(name: name, applicationID: Self.applicationID, options: options)
        if measured.hasRawBaseline { try raw.clear(service: Self.rawService(name)) }
    }

    /// A raw lookup that must find `length` bytes.
    private func rawLookup(_ name: String, expecting length: Int) throws {
        guard try raw.lookupLength(service: Self.rawService(name)) == length else {
            throw BenchmarkError("raw lookup of '\(name)' returned another blob")
        }
    }

    /// The raw write beside a SecureDictionary write, as the table's notes describe it.
    static let rawWriteText = "search + read + `SetSecret` of the same blob"

    /// The least a correct write of an existing item needs on every provider: `SearchItems`,
    /// `GetSecrets` (the check of what is stored, as the library's writes check it) and
    /// `Item.SetSecret` (KeePassXC 2.7.4 asks its user before `CreateItem` replaces an item
    /// another process made).
    private func rawWrite(_ name: String, _ bytes: [UInt8], replacing length: Int) throws {
        let roundTrips = try self.roundTrips()
        guard let path = try roundTrips.search(RoundTrips.rawSearchAttributes(service: Self.rawService(name))) else {
            throw BenchmarkError("the raw item of '\(name)' is not in the keyring")
        }
        guard try roundTrips.secretLength(path: path) == length else {
            throw BenchmarkError("the raw item of '\(name)' holds another blob")
        }
        try roundTrips.setSecret(path: path, bytes)
    }

    /// libsecret's shared service, opened on first use (never in a sandbox, which has no
    /// Secret Service).
    private func roundTrips() throws -> RoundTrips {
        if let openedRoundTrips { return openedRoundTrips }
        let opened = try RoundTrips()
        openedRoundTrips = opened
        return opened
    }

    /// A new instance of a stored 1,000-entry dictionary (no other instance alive): load and decode.
    private func openCell() throws {
        let name = "open-1000"
        let entries = Fixtures.mixedEntries(count: 1000)
        let blob = try Fixtures.blob(entries)
        try open(name).update { $0.dictionary = entries }
        if measured.hasRawBaseline { try raw.store(blob, service: Self.rawService(name)) }
        var holder: SecureDictionary?
        let figures = try time(
            plan.opens, Side(prepare: { holder = nil }, run: { holder = try self.open(name) }),
            raw: Side { try self.rawLookup(name, expecting: blob.count) })
        guard holder?.count == entries.count else { throw BenchmarkError("open loaded \(holder?.count ?? -1) entries") }
        holder = nil
        add("open", "open (load + decode), 1,000 entries", figures, raw: "lookup of the same blob")
        try cleanUp(name)
    }

    /// One `dict["k"]` of a loaded 1,000-entry dictionary per sample (the clock's cost included).
    private func cachedReadCell() throws {
        let name = "cached-read"
        let dictionary = try open(name)
        try dictionary.update { $0.dictionary = Fixtures.mixedEntries(count: 1000) }
        var generator = SplitMix64(seed: 7)
        let keys = (0..<256).map { _ in Fixtures.key(Int(generator.next() % 1000)) }
        var index = 0
        let stats = try Timer.measure(
            plan.cachedReads,
            Side {
                blackHole(dictionary[keys[index & 255]])
                index += 1
            })
        cells.append(LatencyCell(id: "cached-read", operation: "cached read `dict[\"k\"]`", library: Figure(stats)))
        try cleanUp(name)
    }

    /// One `setValue` on an `count`-entry dictionary (a check of the stored item, then a
    /// write of the whole blob) vs a raw lookup plus a raw store of the same blob.
    private func writeCell(entries count: Int) throws {
        try writeCell(
            "write-\(count)", "write: one `setValue`, \(Format.integer(count))-entry dictionary",
            entries: Fixtures.mixedEntries(count: count - 1), changing: [Fixtures.mutatedKey]
        ) { dictionary, value in
            try dictionary.setValue(value, forKey: Fixtures.mutatedKey)
        }
    }

    /// `update { }` changing 5 keys of a 1,000-entry dictionary: one check, one write.
    private func updateCell() throws {
        let entries = Fixtures.mixedEntries(count: 1000)
        let changed = Array(entries.keys.sorted().prefix(5))
        try writeCell("update-5", "`update { }` of 5 keys, 1,000-entry dictionary", entries: entries, changing: changed) {
            dictionary, value in
            try dictionary.update { entries in
                for key in changed { entries[key] = value }
            }
        }
    }

    /// A write that sets the keys `changed` of `entries` to alternating values, by `write`
    /// (given the dictionary and the sample's value), vs a raw write of the same blob.
    private func writeCell(
        _ id: String, _ operation: String, entries start: [String: PropertyListValue], changing changed: [String],
        write: @escaping (SecureDictionary, PropertyListValue) throws -> Void
    ) throws {
        var entries = start
        let blobs = try (0..<2).map { sample -> [UInt8] in
            for key in changed { entries[key] = Fixtures.alternatingValues(sample) }
            return try Fixtures.blob(entries)
        }
        let dictionary = try open(id)
        try dictionary.update { $0.dictionary = entries }
        if measured.hasRawBaseline { try raw.store(blobs[1], service: Self.rawService(id)) }
        var librarySample = 0
        var rawSample = 0
        let figures = try time(
            plan.writes,
            Side {
                try write(dictionary, Fixtures.alternatingValues(librarySample))
                librarySample += 1
            },
            raw: Side {
                try self.rawWrite(id, blobs[rawSample % 2], replacing: blobs[(rawSample + 1) % 2].count)
                rawSample += 1
            })
        add(id, operation, figures, raw: Self.rawWriteText)
        try cleanUp(id)
    }

    /// `SecureDictionary.delete` of a stored 10-entry dictionary (stored again, untimed, before
    /// each sample) vs a raw clear of the same blob's item.
    private func deleteCell() throws {
        let name = "delete"
        let entries = Fixtures.mixedEntries(count: 10)
        let blob = try Fixtures.blob(entries)
        let figures = try time(
            plan.writes,
            Side(
                prepare: { try self.open(name).update { $0.dictionary = entries } },
                run: { _ = try SecureDictionary.delete(name: name, applicationID: Self.applicationID, options: self.options) }
            ),
            raw: Side(
                prepare: { try self.raw.store(blob, service: Self.rawService(name)) },
                run: {
                    guard try self.raw.clear(service: Self.rawService(name)) else {
                        throw BenchmarkError("raw clear found no item")
                    }
                }))
        add("delete", "delete a 10-entry dictionary", figures, raw: "clear of the same item")
    }

    /// `secure-dict read KEY` as users run it, a new process per sample, vs `secret-tool lookup`.
    private func commandLineCell() throws {
        guard let cli = ProcessInfo.processInfo.environment["SD_BENCHMARK_CLI"] else {
            throw BenchmarkError("SD_BENCHMARK_CLI is not set: run through scripts/benchmark")
        }
        let name = "cli"
        let value = "tok-8f2a91c4-5be0-4c1d-a7f3-0d9e6b1c2a77"
        try open(name).setValue(.string(value), forKey: "token")
        let rawService = Self.rawService(name)
        let secretTool = "/usr/bin/secret-tool"
        var failedRuns = 0
        /// One whole process; a failed one runs again (KWallet 5.103 fails one new session in
        /// about 200, libsecret's and ours alike), at most 3 times.
        func process(_ arguments: [String], input: String) throws {
            for attempt in 1...3 {
                do {
                    _ = try ProcessRun.run(arguments, input: input)
                    return
                } catch  where attempt < 3 {
                    failedRuns += 1
                }
            }
        }
        if measured.hasRawBaseline {
            try process([secretTool, "store", "--label", "sd-benchmark", "service", rawService], input: value)
        }
        let ours = [cli, "read"] + cliOptions + ["--app", Self.applicationID, "--name", name, "token"]
        let figures = try time(
            plan.commandLine, Side { try process(ours, input: self.cliInput) },
            raw: Side { try process([secretTool, "lookup", "service", rawService], input: "") })
        add("cli-read", "`secure-dict read KEY`, whole process", figures, raw: "`secret-tool lookup`, whole process")
        cells[cells.count - 1].failedRuns = failedRuns
        _ = try SecureDictionary.delete(name: name, applicationID: Self.applicationID, options: options)
        if measured.hasRawBaseline { try process([secretTool, "clear", "service", rawService], input: "") }
    }
}
