// sd-benchmark: SecureDictionary against raw libsecret, in one run, on one keyring.
// Run it through scripts/benchmark, which builds it in release and starts a private
// gnome-keyring; `sd-benchmark --help` lists the options.
import Foundation

let usage = """
    usage: sd-benchmark [--quick] [--strict] [--json FILE] [--csv FILE] [--chart FILE] [--only IDS]

    Times SecureDictionary and its baselines (raw libsecret store/lookup of the same bytes,
    one item per key, a Mutex-guarded dictionary) in one process against the Secret Service
    on the session bus, and prints the targets table, the growth table and the stage timings.
    Normally started by scripts/benchmark inside a private keyring (scripts/with-private-keyring).

      --quick        every scenario with few samples and small sizes (a smoke run, seconds)
      --strict       exit 3 when a target fails in a full run (default: print FAIL rows
                     and exit 0; --quick runs never fail on timing)
      --json FILE    write every figure as JSON
      --csv FILE     write the growth series as CSV (times in ms)
      --chart FILE   draw the growth series as an SVG chart
      --only IDS     comma-separated scenarios: cached-read, mutation-10, mutation-1000,
                     mutation-10000, mutation-idle, init-1000, init-cold, update-100,
                     read-100, contention, memory, cli, growth, stages
      --allow-any-keyring
                     run against whatever Secret Service the session has (default: refuse
                     unless inside scripts/with-private-keyring; the benchmark writes and
                     deletes items in the default collection)

    Exit status: 0 the run completed (in --quick mode timing targets never fail it),
    1 an error, 2 bad usage, 3 a target failed in a full run with --strict.
    """

struct CommandLineOptions {
    var quick = false
    var strict = false
    var json: String?
    var csv: String?
    var chart: String?
    var only: Set<String>?
    var allowAnyKeyring = false
}

let scenarioIDs = [
    "cached-read", "mutation-10", "mutation-1000", "mutation-10000", "mutation-idle", "init-1000",
    "init-cold", "update-100", "read-100", "contention", "memory", "cli", "growth", "stages",
]

func standardError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

func parse(_ arguments: [String]) -> CommandLineOptions {
    var options = CommandLineOptions()
    var remaining = arguments[...]
    func value(_ flag: String) -> String {
        guard let next = remaining.popFirst() else {
            standardError("sd-benchmark: \(flag) needs a value\n\n\(usage)")
            exit(2)
        }
        return next
    }
    while let argument = remaining.popFirst() {
        switch argument {
        case "--quick": options.quick = true
        case "--strict": options.strict = true
        case "--json": options.json = value(argument)
        case "--csv": options.csv = value(argument)
        case "--chart": options.chart = value(argument)
        case "--only":
            let ids = Set(value(argument).split(separator: ",").map(String.init))
            let unknown = ids.subtracting(scenarioIDs)
            guard unknown.isEmpty else {
                standardError("sd-benchmark: unknown scenario \(unknown.sorted().joined(separator: ", "))")
                exit(2)
            }
            options.only = ids
        case "--allow-any-keyring": options.allowAnyKeyring = true
        case "-h", "--help":
            print(usage)
            exit(0)
        default:
            standardError("sd-benchmark: unknown argument '\(argument)'\n\n\(usage)")
            exit(2)
        }
    }
    return options
}

func runBenchmark(_ options: CommandLineOptions) throws -> Int32 {
    let environment = ProcessInfo.processInfo.environment
    guard options.allowAnyKeyring || environment["SD_PRIVATE_KEYRING"] == "1" else {
        throw BenchmarkError("not inside a private keyring: run scripts/benchmark (or pass --allow-any-keyring)")
    }
    guard environment["DBUS_SESSION_BUS_ADDRESS"] != nil else {
        throw BenchmarkError("no D-Bus session bus: run scripts/benchmark")
    }
    let loadAtStart = Machine.loadAverage()
    let started = Timer.clock.now
    let plan = options.quick ? Plan.quick : Plan.full
    let benchmark = try Benchmark(plan: plan, log: standardError)
    let worker = try WorkerLauncher()
    func wanted(_ id: String) -> Bool { options.only?.contains(id) ?? true }
    func step(_ id: String, _ body: () throws -> Void) throws {
        guard wanted(id) else { return }
        standardError("sd-benchmark: \(id)…")
        try body()
    }

    standardError("sd-benchmark: \(plan.quick ? "quick" : "full") run, load average \(loadAtStart)")
    try step("cached-read") { try benchmark.cachedRead() }
    try step("mutation-10") { try benchmark.mutation(entries: 10, target: 1.15) }
    try step("mutation-1000") { try benchmark.mutation(entries: 1000, target: 1.15) }
    try step("mutation-10000") { try benchmark.mutation(entries: 10_000, target: 1.15) }
    try step("mutation-idle") { try benchmark.idleMutation() }
    try step("init-1000") { try benchmark.initialLoad() }
    try step("init-cold") { try benchmark.coldInit(worker: worker) }
    try step("update-100") { try benchmark.batchedUpdate() }
    try step("read-100") { try benchmark.readManyKeys() }
    try step("contention") { try benchmark.contention(worker: worker) }
    try step("memory") { try benchmark.peakMemory(worker: worker) }
    try step("cli") { try benchmark.commandLine() }
    try step("growth") { try benchmark.growth() }
    try step("stages") { try benchmark.stages() }

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
    if !report.rows.isEmpty {
        print("Targets (medians; ratio = SecureDictionary / baseline, or the speed-up where marked)\n")
        print(report.targetsTable())
        for row in report.rows where row.note != nil { print("- \(row.operation): \(row.note!)") }
        print("")
    }
    if !report.growth.isEmpty {
        print("Growth (medians)\n")
        print(report.growthTable())
        print("")
    }
    if !report.stages.isEmpty {
        print("Stages (where the time goes)\n")
        print(report.stagesTable())
        print("")
    }
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
            print("\n\(failures.count) target(s) missed in --quick mode (not judged: too few samples): \(list)")
        } else {
            print("\n\(failures.count) target(s) missed: \(list)")
        }
        fflush(nil)  // all streams: stdout before what stderr says next
        if options.strict && !options.quick { return 3 }
    }
    return 0
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    if arguments.first == "__worker" {
        try Worker.run(Array(arguments.dropFirst()))
        exit(0)
    }
    exit(try runBenchmark(parse(arguments)))
} catch {
    standardError("sd-benchmark: \(error)")
    exit(1)
}
