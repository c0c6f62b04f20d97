// sd-benchmark: SecureDictionary against raw libsecret, in one run, on one keyring.
// Run it through scripts/benchmark, which builds it in release and starts a private
// gnome-keyring; `sd-benchmark --help` lists the options.
import Foundation

let usage = """
    usage: sd-benchmark [--quick [--guard FILE]] [--strict] [--json FILE] [--csv FILE] [--chart FILE] [--only IDS]
           sd-benchmark calibrate-guard --out FILE [OPTIONS] RUN.json...
           sd-benchmark provider-latency --store STORE [OPTIONS] --json FILE
           sd-benchmark provider-report [OPTIONS] RUN.json...

    Times SecureDictionary and its baselines (raw libsecret store/lookup of the same bytes,
    one item per key, a Mutex-guarded dictionary) in one process against the Secret Service
    on the session bus, and prints the targets table, the growth table and the stage timings.
    Normally started by scripts/benchmark inside a private keyring (scripts/with-private-keyring).

      --quick        every scenario with few samples and small sizes (a smoke run, seconds)
      --guard FILE   with --quick: judge every row against the regression limits in FILE
                     (Benchmarks/quick-guard.json; scripts/benchmark --quick passes it);
                     run the scenario of a row past its limit again, and exit 4 when the
                     row is past its limit in both runs
      --strict       exit 3 when a target fails in a full run (default: print FAIL rows
                     and exit 0; --quick runs never fail on a target, only on --guard)
      --json FILE    write every figure as JSON
      --csv FILE     write the growth series as CSV (times in ms)
      --chart FILE   draw the growth series as an SVG chart
      --only IDS     comma-separated scenarios: cached-read, mutation-10, mutation-1000,
                     mutation-10000, mutation-idle, init-1000, init-cold, update-100,
                     update-1000, read-100, contention, memory, memory-open, cli, growth,
                     stages
      --allow-any-keyring
                     run against whatever Secret Service the session has (default: refuse
                     unless inside scripts/with-private-keyring; the benchmark writes and
                     deletes items in the default collection)

    `calibrate-guard` writes a guard file from the JSON of several --quick runs
    (`sd-benchmark calibrate-guard --help`). `provider-latency` times the calls of the
    per-provider latency table on one store, `provider-report` makes the table and judges
    quick runs against their baseline (scripts/benchmark --providers runs both; see their --help).

    Exit status: 0 the run completed (in --quick mode targets never fail it), 1 an error,
    2 bad usage, 3 a target failed in a full run with --strict, 4 a --quick run with
    --guard regressed: a ratio is past its limit, twice.
    """

struct CommandLineOptions {
    var quick = false
    var guardFile: String?
    var strict = false
    var json: String?
    var csv: String?
    var chart: String?
    var only: Set<String>?
    var allowAnyKeyring = false
}

/// Every scenario in run order: its id (for --only) and what runs it.
let scenarios: [(id: String, run: @Sendable (Benchmark, WorkerLauncher) throws -> Void)] = [
    ("cached-read", { benchmark, _ in try benchmark.cachedRead() }),
    ("mutation-10", { benchmark, _ in try benchmark.mutation(entries: 10, target: 1.15) }),
    ("mutation-1000", { benchmark, _ in try benchmark.mutation(entries: 1000, target: 1.15) }),
    ("mutation-10000", { benchmark, _ in try benchmark.mutation(entries: 10_000, target: 1.15) }),
    ("mutation-idle", { benchmark, _ in try benchmark.idleMutation() }),
    ("init-1000", { benchmark, _ in try benchmark.initialLoad() }),
    ("init-cold", { benchmark, worker in try benchmark.coldInit(worker: worker) }),
    ("update-100", { benchmark, _ in try benchmark.batchedUpdate() }),
    ("update-1000", { benchmark, _ in try benchmark.updateTenOfThousand() }),
    ("read-100", { benchmark, _ in try benchmark.readManyKeys() }),
    ("contention", { benchmark, worker in try benchmark.contention(worker: worker) }),
    ("memory", { benchmark, worker in try benchmark.peakMemory(worker: worker) }),
    ("memory-open", { benchmark, worker in try benchmark.residentMemory(worker: worker) }),
    ("cli", { benchmark, _ in try benchmark.commandLine() }),
    ("growth", { benchmark, _ in try benchmark.growth() }),
    ("stages", { benchmark, _ in try benchmark.stages() }),
]
let scenarioIDs = scenarios.map(\.id)

func standardError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

func parse(_ arguments: [String]) throws -> CommandLineOptions {
    let flags = try Flags(
        arguments, values: ["--guard", "--json", "--csv", "--chart", "--only"],
        switches: ["--quick", "--strict", "--allow-any-keyring"])
    if flags.help {
        print(usage)
        exit(0)
    }
    var options = CommandLineOptions(
        quick: flags.switches.contains("--quick"), guardFile: flags.values["--guard"],
        strict: flags.switches.contains("--strict"), json: flags.values["--json"], csv: flags.values["--csv"],
        chart: flags.values["--chart"], allowAnyKeyring: flags.switches.contains("--allow-any-keyring"))
    if let only = flags.values["--only"] {
        let ids = Set(only.split(separator: ",").map(String.init))
        let unknown = ids.subtracting(scenarioIDs)
        guard unknown.isEmpty else { throw UsageError("unknown scenario \(unknown.sorted().joined(separator: ", "))") }
        options.only = ids
    }
    if options.guardFile != nil && !options.quick {
        throw UsageError("--guard needs --quick (its limits come from quick runs)")
    }
    return options
}

/// A table of the report under its title, then its notes; nothing when it has no rows.
func printSection(_ title: String, rows: Int, _ table: () -> String, notes: [String] = []) {
    guard rows > 0 else { return }
    print("\(title)\n")
    print(table())
    for note in notes { print(note) }
    print("")
}

func runBenchmark(_ options: CommandLineOptions) throws -> Int32 {
    let environment = ProcessInfo.processInfo.environment
    guard options.allowAnyKeyring || environment["SD_PRIVATE_KEYRING"] == "1" else {
        throw BenchmarkError("not inside a private keyring: run scripts/benchmark (or pass --allow-any-keyring)")
    }
    guard environment["DBUS_SESSION_BUS_ADDRESS"] != nil else {
        throw BenchmarkError("no D-Bus session bus: run scripts/benchmark")
    }
    let quickGuard = try options.guardFile.map(QuickGuard.load)
    let loadAtStart = Machine.loadAverage()
    let started = Timer.clock.now
    let plan = options.quick ? Plan.quick : Plan.full
    let benchmark = try Benchmark(plan: plan, log: standardError)
    let worker = try WorkerLauncher()
    /// The scenario that made each row, for the guard's re-run.
    var scenarioOfRow: [String: String] = [:]
    func run(on benchmark: Benchmark, _ wanted: (String) -> Bool) throws {
        for (id, body) in scenarios where wanted(id) {
            standardError("sd-benchmark: \(id)…")
            let before = benchmark.report.rows.count
            try body(benchmark, worker)
            for row in benchmark.report.rows[before...] { scenarioOfRow[row.id] = id }
        }
    }

    standardError("sd-benchmark: \(plan.quick ? "quick" : "full") run, load average \(loadAtStart)")
    try run(on: benchmark) { options.only?.contains($0) ?? true }

    var report = benchmark.report
    report.machine = Machine.current(loadAtStart: loadAtStart)
    report.durationSeconds = Timer.seconds(started.duration(to: Timer.clock.now))
    report.notes = [
        "mode: \(report.mode); medians and p99 (nearest rank) of alternating samples, both sides in one process",
        "samples: writes \(plan.writes.samples) (10,000 entries: \(plan.bigWrites.samples); after idle: \(plan.idleWrites.samples)), cold starts \(plan.coldStarts.samples), cached reads \(plan.cachedReads.samples) × \(plan.readBatch) reads, batches \(plan.batches.samples), contention baseline \(plan.contentionBaseline.samples), memory runs \(plan.memoryRuns)",
        "growth: \(plan.growth.samples) samples per point",
    ]

    let machine = report.machine!
    print(
        """

        SecureDictionary benchmark (\(report.mode)): \(machine.cpuModel), \(machine.cpus) CPUs, \(machine.kernel)
        gnome-keyring \(machine.gnomeKeyring), libsecret \(machine.libsecret); load average \(machine.loadAverageAtStart) at start, \(machine.loadAverageAtEnd) at end; \(Format.fixed(report.durationSeconds, 1)) s

        """)
    printSection(
        "Targets (medians; ratio = SecureDictionary / baseline, or the speed-up where marked)", rows: report.rows.count,
        report.targetsTable, notes: report.rows.compactMap { row in row.note.map { "- \(row.operation): \($0)" } })
    printSection("Growth (medians)", rows: report.growth.count, report.growthTable)
    printSection("Stages (where the time goes)", rows: report.stages.count, report.stagesTable)
    for note in report.notes { print("note: \(note)") }
    fflush(nil)  // all streams: stdout before what stderr says next

    if let path = options.json {
        try report.writeJSON(to: path)
        standardError("sd-benchmark: wrote \(path)")
    }
    if let path = options.csv {
        try Files.write(Data(report.growthCSV().utf8), to: path)
        standardError("sd-benchmark: wrote \(path)")
    }
    if let path = options.chart {
        guard !report.growth.isEmpty else { throw BenchmarkError("--chart needs the growth scenario") }
        try Files.write(Data(GrowthChart.svg(report).utf8), to: path)
        standardError("sd-benchmark: wrote \(path)")
    }

    let failures = report.failures
    if !failures.isEmpty {
        let list = failures.map(\.id).joined(separator: ", ")
        if options.quick {
            print("\n\(failures.count) target(s) missed in --quick mode (not judged on so few samples: see the guard): \(list)")
        } else {
            print("\n\(failures.count) target(s) missed: \(list)")
        }
        fflush(nil)  // all streams: stdout before what stderr says next
        if options.strict && !options.quick { return 3 }
    }
    guard let quickGuard else { return 0 }

    // The regression guard. A row past its limit must stay past it when its scenario runs
    // again: a regression reproduces, a burst of load from other processes seldom does.
    let path = options.guardFile!
    let calibration = quickGuard.calibration
    print(
        """

        Regression guard (\(path): \(calibration.runs) quick runs of \(calibration.commit), \(calibration.date), \(calibration.machine))

        """)
    let (verdicts, unguarded) = quickGuard.judge(report.rows)
    print(QuickGuard.table(verdicts))
    if !unguarded.isEmpty {
        print("\nnot guarded (no limit in \(path)): \(unguarded.joined(separator: ", "))")
    }
    let suspects = verdicts.filter { !$0.passes }
    guard !suspects.isEmpty else {
        print("\nguard: all \(verdicts.count) guarded rows within their limits")
        return 0
    }
    let again = Set(suspects.compactMap { scenarioOfRow[$0.row.id] })
    print(
        "\nguard: \(suspects.map(\.row.id).joined(separator: ", ")) past the limit; running "
            + "\(scenarioIDs.filter(again.contains).joined(separator: ", ")) again to confirm\n")
    fflush(nil)  // all streams: stdout before what stderr says next
    let retry = try Benchmark(plan: plan, log: standardError)
    try run(on: retry, again.contains)
    let retried = quickGuard.judge(retry.report.rows).verdicts
    print(QuickGuard.table(retried))
    let confirmed = suspects.compactMap { first -> (QuickGuard.Verdict, QuickGuard.Verdict)? in
        guard let second = retried.first(where: { $0.row.id == first.row.id }), !second.passes else { return nil }
        return (first, second)
    }
    guard !confirmed.isEmpty else {
        print("\nguard: within the limits on the second run: no regression")
        return 0
    }
    print("")
    for (first, second) in confirmed {
        print(
            "REGRESSED \(first.row.id) (\(first.row.operation)): \(first.explanation); "
                + "second run \(Format.ratio(second.row.ratio))×")
    }
    fflush(nil)
    standardError(
        "sd-benchmark: \(confirmed.count) row(s) regressed past the guard's limit, in two runs: "
            + confirmed.map { first, second in
                "\(first.row.id) \(Format.ratio(first.row.ratio))× and \(Format.ratio(second.row.ratio))× "
                    + "(limit \(Format.ratio(first.limit))×)"
            }.joined(separator: ", ") + "; see Benchmarks/README.md, \"The --quick regression guard\"")
    return 4
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    if arguments.first == "__worker" {
        try Worker.run(Array(arguments.dropFirst()))
        exit(0)
    }
    if arguments.first == "calibrate-guard" {
        try GuardCalibration.run(Array(arguments.dropFirst()))
        exit(0)
    }
    if arguments.first == "provider-latency" { exit(try ProviderLatency.run(Array(arguments.dropFirst()))) }
    if arguments.first == "provider-report" { exit(try ProviderReport.run(Array(arguments.dropFirst()))) }
    exit(try runBenchmark(try parse(arguments)))
} catch let error as UsageError {
    standardError("sd-benchmark: \(error)")
    exit(2)
} catch {
    standardError("sd-benchmark: \(error)")
    exit(1)
}
