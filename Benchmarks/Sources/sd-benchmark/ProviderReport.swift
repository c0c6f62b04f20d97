import Foundation

/// `sd-benchmark provider-report`: the per-provider latency table from the JSON of
/// `provider-latency` runs, written into Benchmarks/README.md; and for quick runs, the
/// provider guard (medians against a committed baseline) and the baseline itself.
enum ProviderReport {
    static let usage = """
        usage: sd-benchmark provider-report [--readme FILE] [--guard BASELINE] [--write-baseline FILE]
                                            [--command TEXT] RUN.json...

        Prints the per-provider latency table of the runs (in the order given) and:
          --readme FILE          writes it into FILE between the lines
                                 \(beginMarker) and \(endMarker)
          --guard BASELINE       compares every median with BASELINE's; exits 4 when one is
                                 more than its bound (10×) above it, naming the provider,
                                 the call and both figures
          --write-baseline FILE  writes the runs' medians as the guard's baseline
          --command TEXT         the command that made the runs, for the README
        """

    static let beginMarker = "<!-- provider-latency-table: begin (scripts/benchmark --providers writes this) -->"
    static let endMarker = "<!-- provider-latency-table: end -->"

    /// The quick baseline the provider guard compares medians with.
    struct Baseline: Codable {
        var about: String
        /// A median fails when it is more than `bound` times the baseline's.
        var bound: Double
        var date: String
        var machine: String
        var loadAverages: [String]
        var command: String
        /// Run key ("Debian 12/kwallet/keyring") → cell id ("write-10", or "write-10 raw") → median in seconds.
        var medians: [String: [String: Double]]
    }

    static func run(_ arguments: [String]) throws -> Int32 {
        let flags = try Flags(arguments, values: ["--readme", "--guard", "--write-baseline", "--command"], files: true)
        if flags.help {
            print(usage)
            return 0
        }
        let (readme, guardFile, baselineOut) = (
            flags.values["--readme"], flags.values["--guard"], flags.values["--write-baseline"]
        )
        let command = flags.values["--command"] ?? "scripts/benchmark --providers"
        let files = flags.files
        guard !files.isEmpty else { throw UsageError("give the runs' JSON files") }
        let runs = try files.map { path in
            try JSONDecoder().decode(LatencyRun.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        }
        let section = markdown(runs, command: command)
        print(section)
        if let readme {
            try splice(section, into: readme)
            standardError("sd-benchmark: wrote the provider table into \(readme)")
        }
        if let baselineOut {
            try Files.writeJSON(baseline(runs, command: command), to: baselineOut, endingWithNewline: true)
            standardError("sd-benchmark: wrote \(baselineOut)")
        }
        guard let guardFile else { return 0 }
        let baseline = try JSONDecoder().decode(Baseline.self, from: Data(contentsOf: URL(fileURLWithPath: guardFile)))
        return judge(runs, against: baseline, path: guardFile)
    }

    // MARK: The table

    /// Every figure of `cell` on one side: "median / p99".
    private static func figure(_ figure: Figure?) -> String {
        guard let figure else { return "—" }
        return "\(Format.duration(figure.median)) / \(Format.duration(figure.p99))"
    }

    /// The row label of a run: release, store, provider and its version.
    static func label(_ run: LatencyRun) -> String {
        switch run.store {
        case .keyring: "\(run.release), \(run.provider) \(run.version)"
        case .portal: "\(run.release), Secret portal (`\(run.store.typeName)`; \(run.version))"
        case .credential: "\(run.release), `\(run.store.typeName)`, systemd credential"
        case .passphrase: "\(run.release), `\(run.store.typeName)`, passphrase (key in the kernel keyring)"
        }
    }

    static func markdown(_ runs: [LatencyRun], command: String) -> String {
        let ids = ["open", "cached-read", "write-10", "write-1000", "update-5", "delete", "cli-read"]
        let first = runs[0]
        let operations = ids.map { id in
            runs.lazy.compactMap { $0.cells.first { $0.id == id } }.first?.operation ?? id
        }
        var body: [[String]] = []
        for run in runs {
            func cell(_ id: String) -> LatencyCell? { run.cells.first { $0.id == id } }
            body.append([label(run), "SecureDictionary"] + ids.map { figure(cell($0)?.library) })
            if run.store.hasRawBaseline {
                body.append(["", "raw libsecret"] + ids.map { id in cell(id).map { figure($0.raw) } ?? "—" })
            }
        }
        let header = ["provider / store", "client"] + ids.map { "`\($0)`" }
        let loads = runs.map(\.machine.loadAverageAtStart) + [runs.last!.machine.loadAverageAtEnd]
        let peakLoad = loads.compactMap { Double($0.split(separator: " ").first ?? "") }.max() ?? 0
        let samples = ids.map { id in
            let counts = Set(runs.compactMap { $0.cells.first { $0.id == id }?.library.count })
            return "`\(id)` \(counts.sorted().map(String.init).joined(separator: "/"))"
        }
        let failed = runs.flatMap { run in
            run.cells.filter { $0.failedRuns > 0 }.map { "\(label(run)) `\($0.id)`: \($0.failedRuns)" }
        }
        var lines = [
            beginMarker,
            "",
            "Median / p99 (nearest rank) per call, \(first.mode) run of `\(command)`, "
                + "\(first.machine.date) (start of the first row): \(first.machine.cpuModel), "
                + "\(first.machine.cpus) CPUs, \(first.machine.kernel); client libsecret \(first.machine.libsecret) "
                + "(this machine's, for every row); release build; "
                + "\(Format.fixed(runs.map(\.durationSeconds).reduce(0, +), 0)) s of measuring in all.",
            "1-minute load average from \(loads.first!) (start) to \(loads.last!) (end), at most "
                + "\(Format.fixed(peakLoad, 2)) at the start of a row"
                // The benchmark and the provider it measures count in the load themselves
                // (about 1 to 1.5): only a load of a whole core each means other work ran.
                + (peakLoad >= Double(first.machine.cpus)
                    ? ": other work ran on the \(first.machine.cpus) cores, so every figure is an upper bound."
                    : ": under the \(first.machine.cpus) cores, of which the benchmark and its provider make about 1."),
            "",
            Format.table(header, body),
            "",
            "Columns: " + zip(ids, operations).map { "`\($0)` \($1)" }.joined(separator: "; ") + ".",
            "Raw libsecret beside each keyring row, on the same provider and bus, alternating sample by sample: "
                + "`open` a lookup of the same blob, `write-*` and `update-5` `SearchItems` + `GetSecrets` + `Item.SetSecret` "
                + "of the same blob (the least a checked write of an existing item needs on every provider), "
                + "`delete` a clear of the same item, `cli-read` `secret-tool lookup` (a whole process).",
            "Samples per cell: " + samples.joined(separator: ", ") + " (after untimed warm-up runs).",
        ]
        if !failed.isEmpty {
            lines.append(
                "Whole processes that failed and ran again (their time counts in the sample): "
                    + failed.joined(separator: "; ") + ".")
        }
        lines += ["", endMarker]
        return lines.joined(separator: "\n")
    }

    /// Replaces the text between the markers of `path` (the markers stay) with `section`.
    static func splice(_ section: String, into path: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        guard let begin = text.range(of: beginMarker), let end = text.range(of: endMarker), begin.upperBound <= end.lowerBound
        else {
            throw BenchmarkError("\(path) has no lines \(beginMarker) … \(endMarker) to write the table between")
        }
        try Files.write(Data((String(text[..<begin.lowerBound]) + section + String(text[end.upperBound...])).utf8), to: path)
    }

    // MARK: The guard

    static func baseline(_ runs: [LatencyRun], command: String) -> Baseline {
        var medians: [String: [String: Double]] = [:]
        for run in runs {
            for cell in run.cells {
                medians[run.key, default: [:]][cell.id] = cell.library.median
                if let raw = cell.raw { medians[run.key, default: [:]][cell.id + " raw"] = raw.median }
            }
        }
        let machine = runs[0].machine
        return Baseline(
            about: "The provider guard's baseline, read by scripts/benchmark --providers --quick: "
                + "see Benchmarks/README.md. Remake it with scripts/benchmark --providers --quick --write-provider-baseline "
                + "on the machine CI runs on.",
            bound: 10, date: machine.date, machine: "\(machine.cpuModel), \(machine.cpus) CPUs, \(machine.kernel)",
            loadAverages: runs.map(\.machine.loadAverageAtStart), command: command, medians: medians)
    }

    /// 0 when every median is within the bound, else 4 with one line per call past it.
    static func judge(_ runs: [LatencyRun], against baseline: Baseline, path: String) -> Int32 {
        var regressions: [String] = []
        var missing: [String] = []
        var judged = 0
        for run in runs {
            for cell in run.cells {
                let sides =
                    [("SecureDictionary", cell.id, cell.library.median)]
                    + (cell.raw.map { [("raw libsecret", cell.id + " raw", $0.median)] } ?? [])
                for (side, id, median) in sides {
                    guard let before = baseline.medians[run.key]?[id] else {
                        missing.append("\(run.key) \(id)")
                        continue
                    }
                    judged += 1
                    if median > baseline.bound * before {
                        regressions.append(
                            "REGRESSED \(run.key) \(cell.id) (\(side)): median \(Format.duration(median)) now, "
                                + "\(Format.duration(before)) in the baseline: \(Format.ratio(median / before))× "
                                + "(bound \(Format.number(baseline.bound))×)")
                    }
                }
            }
        }
        for key in Set(baseline.medians.keys).subtracting(runs.map(\.key)).sorted() {
            regressions.append("MISSING \(key): in the baseline \(path), but no run measured it")
        }
        print("")
        if !missing.isEmpty { print("provider guard: not in \(path), not judged: \(missing.joined(separator: ", "))") }
        guard !regressions.isEmpty else {
            print("provider guard: all \(judged) medians within \(Format.number(baseline.bound))× of \(path)")
            return 0
        }
        for line in regressions { print(line) }
        fflush(nil)  // all streams: stdout before what stderr says next
        standardError(
            "sd-benchmark: \(regressions.count) call(s) past the provider guard (\(path), measured \(baseline.date)); "
                + "see Benchmarks/README.md, \"Per-provider latency\"")
        return 4
    }
}
