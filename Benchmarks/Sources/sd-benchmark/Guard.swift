import Foundation

/// The regression guard of `--quick` runs, read from `Benchmarks/quick-guard.json`.
///
/// A quick run has too few samples to judge a target, but it can tell a regression from
/// noise. Every row of the file holds the row's ratio in several quick runs of one commit on
/// one machine: their median (`baseline`), min and max. Limits are worked out on the cost
/// scale, SecureDictionary's time (or memory) as a multiple of its baseline's: the ratio
/// itself for ≤ rows, 1 / speed-up for the ≥ rows:
///
///     reference = max(target, baseline)                         (on the cost scale)
///     allowance = max(floor × reference, safetyFactor × (max − min))
///     limit     = reference + allowance
///
/// A row that already misses its target (its quick baseline is above it) fails only when it
/// gets worse than it was by more than the noise measured; a row that meets its target
/// fails only when it misses it by more than that noise. `runBenchmark` runs the scenario of
/// a row past its limit again and fails the run only when the row is past it both times.
struct QuickGuard: Codable {
    /// Where and how the baselines were measured.
    struct Calibration: Codable {
        var commit: String
        var date: String
        var machine: String
        var command: String
        var runs: Int
        /// The load average (1, 5, 15 min) at the start of each run.
        var loadAverages: [String]
    }

    /// How allowances follow from the measured spread.
    struct Rule: Codable {
        var safetyFactor: Double
        var floor: Double
        var text: String
    }

    struct Row: Codable {
        var kind: TargetRow.Kind
        /// The target when the row was calibrated (the code's target is the one used).
        var target: Double
        /// Median of the row's ratio (as printed: a speed-up for ≥ rows) over the runs.
        var baseline: Double
        var min: Double
        var max: Double
        /// max(floor × reference, safetyFactor × (max − min)), on the cost scale.
        var allowance: Double
        /// Every calibration run's ratio, in run order.
        var ratios: [Double]
    }

    var about: String
    var calibration: Calibration
    var rule: Rule
    var rows: [String: Row]

    static func load(_ path: String) throws -> QuickGuard {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw BenchmarkError("cannot read the guard file \(path): \(error.localizedDescription)")
        }
        do {
            return try JSONDecoder().decode(QuickGuard.self, from: data)
        } catch {
            throw BenchmarkError("the guard file \(path) is not valid: \(error)")
        }
    }

    /// A ratio as printed, on the cost scale (library / baseline); the same function maps back.
    static func cost(_ ratio: Double, _ kind: TargetRow.Kind) -> Double { kind == .atMost ? ratio : 1 / ratio }

    /// The row's limit, on the scale it prints (a speed-up for ≥ rows).
    static func limit(target: Double, _ guardRow: Row) -> Double {
        let reference = max(cost(target, guardRow.kind), cost(guardRow.baseline, guardRow.kind))
        return cost(reference + guardRow.allowance, guardRow.kind)
    }

    /// One row of a run, judged against its limit.
    struct Verdict {
        var row: TargetRow
        var guardRow: Row
        /// On the scale the row prints (a speed-up for ≥ rows).
        var limit: Double

        var passes: Bool {
            switch row.kind {
            case .atMost: row.ratio <= limit
            case .atLeast: row.ratio >= limit
            }
        }

        /// "ratio 1.85× > limit 1.42× = max(target 1.15×, quick baseline 0.99×) + allowance 0.27".
        var explanation: String {
            let allowance = Format.fixed(guardRow.allowance, guardRow.allowance < 0.1 ? 4 : 2)
            switch row.kind {
            case .atMost:
                return "ratio \(Format.ratio(row.ratio))× \(passes ? "≤" : ">") limit \(Format.ratio(limit))× "
                    + "= max(target \(Format.number(row.target))×, quick baseline \(Format.ratio(guardRow.baseline))×) "
                    + "+ allowance \(allowance)"
            case .atLeast:
                return "speed-up \(Format.ratio(row.ratio))× \(passes ? "≥" : "<") limit \(Format.ratio(limit))× "
                    + "= 1 / (max(1/\(Format.number(row.target)), 1/\(Format.ratio(guardRow.baseline))) "
                    + "+ allowance \(allowance))"
            }
        }
    }

    /// The verdict of every row that has a limit, and the ids of those that have none.
    func judge(_ rows: [TargetRow]) -> (verdicts: [Verdict], unguarded: [String]) {
        var verdicts: [Verdict] = []
        var unguarded: [String] = []
        for row in rows {
            guard let guardRow = self.rows[row.id], guardRow.kind == row.kind else {
                unguarded.append(row.id)
                continue
            }
            verdicts.append(Verdict(row: row, guardRow: guardRow, limit: Self.limit(target: row.target, guardRow)))
        }
        return (verdicts, unguarded)
    }

    static func table(_ verdicts: [Verdict]) -> String {
        let header = ["row", "ratio", "target", "quick baseline (min–max)", "limit", "guard"]
        let body = verdicts.map { verdict -> [String] in
            let row = verdict.row
            let guardRow = verdict.guardRow
            return [
                row.id, row.ratioText, row.targetText,
                "\(Format.ratio(guardRow.baseline))× (\(Format.ratio(guardRow.min))–\(Format.ratio(guardRow.max)))",
                "\(row.kind == .atMost ? "≤" : "≥") \(Format.ratio(verdict.limit))×",
                verdict.passes ? "ok" : "REGRESSED",
            ]
        }
        return Format.table(header, body)
    }
}

// MARK: Calibration

/// What `calibrate-guard` reads from each run's JSON (`--json`).
private struct RunFile: Decodable {
    struct Row: Decodable {
        var id: String
        var kind: TargetRow.Kind
        var target: Double
        var ratio: Double
    }

    var mode: String
    /// As the run wrote it (`Report.machine`).
    var machine: Machine
    var rows: [Row]
}

enum GuardCalibration {
    static let usage = """
        usage: sd-benchmark calibrate-guard --out FILE [--commit TEXT] [--command TEXT]
                                            [--safety-factor X] [--floor X] RUN.json...

        Writes the --quick regression guard (Benchmarks/quick-guard.json) from the JSON of
        several --quick runs (scripts/benchmark --calibrate-guard N makes them and calls this)
        and prints the noise table. Per row: the median, min and max ratio, and on the cost
        scale (the ratio, or 1 / the speed-up) allowance = max(floor × max(target, median),
        safety factor × (max − min)). Defaults: --safety-factor 1.5, --floor 0.1.
        """

    static func run(_ arguments: [String]) throws {
        let flags = try Flags(
            arguments, values: ["--out", "--commit", "--command", "--safety-factor", "--floor"], files: true)
        if flags.help {
            print(usage)
            return
        }
        let commit = flags.values["--commit"] ?? "unknown"
        let command = flags.values["--command"] ?? "scripts/benchmark --quick --json FILE"
        let safetyFactor = try flags.number("--safety-factor", atLeast: 1, else: 1.5)
        let floor = try flags.number("--floor", atLeast: 0, else: 0.1)
        let files = flags.files
        guard let out = flags.values["--out"] else { throw UsageError("--out is required") }
        guard files.count >= 3 else { throw UsageError("give at least 3 runs (6 or more is better)") }

        let runs = try files.map { path -> RunFile in
            let run = try JSONDecoder().decode(RunFile.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            guard run.mode == "quick" else { throw BenchmarkError("\(path) is not a --quick run") }
            return run
        }
        var rows: [String: QuickGuard.Row] = [:]
        for id in Set(runs.flatMap { $0.rows.map(\.id) }) {
            let samples = runs.compactMap { run in run.rows.first { $0.id == id } }
            guard samples.count == runs.count else {
                throw BenchmarkError("row \(id) is in \(samples.count) of \(runs.count) runs: calibrate with whole quick runs")
            }
            let kind = samples[0].kind
            let target = samples[0].target
            let ratios = samples.map(\.ratio)
            let shown = Stats(ratios)
            let costs = Stats(ratios.map { QuickGuard.cost($0, kind) })
            let reference = max(QuickGuard.cost(target, kind), costs.median)
            let allowance = max(floor * reference, safetyFactor * (costs.max - costs.min))
            rows[id] = QuickGuard.Row(
                kind: kind, target: target, baseline: rounded(shown.median), min: rounded(shown.min),
                max: rounded(shown.max), allowance: rounded(allowance), ratios: ratios.map(rounded))
        }
        let machine = runs[0].machine
        let file = QuickGuard(
            about: "The --quick regression guard, read by scripts/benchmark --quick: see Benchmarks/README.md. "
                + "Remake it with scripts/benchmark --calibrate-guard N on the machine CI runs on.",
            calibration: .init(
                commit: commit, date: machine.date, machine: "\(machine.cpuModel), \(machine.cpus) CPUs, \(machine.kernel)",
                command: command, runs: runs.count, loadAverages: runs.map(\.machine.loadAverageAtStart)),
            rule: .init(
                safetyFactor: safetyFactor, floor: floor,
                text: "on the cost scale c (the ratio for ≤ rows, 1 / speed-up for ≥ rows): "
                    + "limit = max(c(target), c(baseline)) + allowance, "
                    + "allowance = max(floor × max(c(target), c(baseline)), safetyFactor × (max c − min c)); "
                    + "baseline, min and max are the median, min and max ratio of the calibration runs"),
            rows: rows)
        try Files.writeJSON(file, to: out, endingWithNewline: true)
        print(noiseTable(file, order: runs[0].rows.map(\.id)))
        standardError("sd-benchmark: wrote \(out) from \(runs.count) runs")
    }

    /// The noise table of the README: per row the median, min, max, spread, allowance and limit.
    static func noiseTable(_ file: QuickGuard, order: [String]) -> String {
        let header = ["row", "target", "median", "min", "max", "spread (cost)", "allowance (cost)", "limit"]
        let body = order.filter { file.rows[$0] != nil }.map { id -> [String] in
            let row = file.rows[id]!
            let sign = row.kind == .atMost ? "≤" : "≥"
            let spread = abs(QuickGuard.cost(row.max, row.kind) - QuickGuard.cost(row.min, row.kind))
            return [
                "`\(id)`", "\(sign) \(Format.number(row.target))×", "\(Format.ratio(row.baseline))×",
                "\(Format.ratio(row.min))×", "\(Format.ratio(row.max))×", Format.fixed(spread, spread < 0.1 ? 4 : 2),
                Format.fixed(row.allowance, row.allowance < 0.1 ? 4 : 2),
                "\(sign) \(Format.ratio(QuickGuard.limit(target: row.target, row)))×",
            ]
        }
        return Format.table(header, body)
    }

    private static func rounded(_ value: Double) -> Double { (value * 10_000).rounded() / 10_000 }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
