import Foundation
import SecureDictionaryTestSupport

/// One row of the targets table.
struct TargetRow: Encodable {
    enum Kind: String, Codable {
        /// `ratio = library / baseline`, must be ≤ target.
        case atMost
        /// `ratio = baseline / library` (a speed-up), must be ≥ target.
        case atLeast
    }

    enum Unit: String, Codable {
        case seconds
        case bytes
    }

    var id: String
    var operation: String
    var unit: Unit
    var library: Stats
    var baselineName: String
    var baseline: Stats
    var kind: Kind
    var target: Double
    var blobBytes: Int?
    var note: String?

    var ratio: Double {
        switch kind {
        case .atMost: library.median / baseline.median
        case .atLeast: baseline.median / library.median
        }
    }

    var pass: Bool {
        switch kind {
        case .atMost: ratio <= target
        case .atLeast: ratio >= target
        }
    }

    var targetText: String {
        switch kind {
        case .atMost: "≤ \(Format.number(target))×"
        case .atLeast: "≥ \(Format.number(target))× faster"
        }
    }

    var ratioText: String {
        switch kind {
        case .atMost: "\(Format.ratio(ratio))×"
        case .atLeast: "\(Format.ratio(ratio))× faster"
        }
    }

    private enum CodingKeys: String, CodingKey {
        case id, operation, unit, library, baselineName, baseline, kind, target, blobBytes, note
        case ratio, pass
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(operation, forKey: .operation)
        try container.encode(unit, forKey: .unit)
        try container.encode(library, forKey: .library)
        try container.encode(baselineName, forKey: .baselineName)
        try container.encode(baseline, forKey: .baseline)
        try container.encode(kind, forKey: .kind)
        try container.encode(target, forKey: .target)
        try container.encodeIfPresent(blobBytes, forKey: .blobBytes)
        try container.encodeIfPresent(note, forKey: .note)
        try container.encode(ratio, forKey: .ratio)
        try container.encode(pass, forKey: .pass)
    }
}

/// One size of the growth series: a mutation and a load, next to raw libsecret.
struct GrowthPoint: Encodable, Sendable {
    enum Series: String, Codable, Sendable {
        /// `parameter` = number of mixed entries.
        case entries
        /// `parameter` = bytes of the one `.data` value.
        case valueBytes
    }

    var series: Series
    var parameter: Int
    var blobBytes: Int
    var mutation: Stats
    var rawStore: Stats
    var load: Stats
    var rawLookup: Stats
}

/// One measured stage of a SecureDictionary call, for "where the time goes".
struct Stage: Encodable {
    var name: String
    var stats: Stats
    var note: String?
}

struct Machine: Codable {
    var host: String
    var kernel: String
    var cpus: Int
    var cpuModel: String
    var loadAverageAtStart: String
    var loadAverageAtEnd: String
    var libsecret: String
    var gnomeKeyring: String
    var date: String

    static func current(loadAtStart: String) -> Machine {
        var name = utsname()
        uname(&name)
        func field<T>(_ value: T) -> String {
            withUnsafeBytes(of: value) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        let cpuModel =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown"
        return Machine(
            host: field(name.nodename),
            kernel: "\(field(name.sysname)) \(field(name.release)) \(field(name.machine))",
            cpus: ProcessInfo.processInfo.activeProcessorCount,
            cpuModel: cpuModel,
            loadAverageAtStart: loadAtStart,
            loadAverageAtEnd: loadAverage(),
            libsecret: command("pkg-config", ["--modversion", "libsecret-1"]) ?? "unknown",
            gnomeKeyring: command("gnome-keyring-daemon", ["--version"])?
                .replacingOccurrences(of: "gnome-keyring-daemon: ", with: "") ?? "unknown",
            date: ISO8601DateFormatter().string(from: Date())
        )
    }

    /// The first three fields of /proc/loadavg.
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// The first line a command prints, or nil.
    static func command(_ name: String, _ arguments: [String]) -> String? {
        guard let output = try? ChildProcess.run(name, arguments, timeout: .seconds(30)), output.succeeded else { return nil }
        return output.text.split(separator: "\n").first.map(String.init)
    }
}

struct Report: Encodable {
    var mode: String
    var machine: Machine?
    var rows: [TargetRow] = []
    var growth: [GrowthPoint] = []
    var stages: [Stage] = []
    var notes: [String] = []
    var durationSeconds: Double = 0

    var failures: [TargetRow] { rows.filter { !$0.pass } }

    // MARK: Text

    func targetsTable() -> String {
        let header = ["operation", "SecureDictionary median", "p99", "baseline", "baseline median", "ratio", "target", "result"]
        func value(_ number: Double, _ unit: TargetRow.Unit) -> String {
            unit == .bytes ? Format.bytes(number) : Format.duration(number)
        }
        var body: [[String]] = []
        for row in rows {
            let cells: [String] = [
                row.operation, value(row.library.median, row.unit), value(row.library.p99, row.unit),
                row.baselineName, value(row.baseline.median, row.unit), row.ratioText, row.targetText,
                row.pass ? "PASS" : "FAIL",
            ]
            body.append(cells)
        }
        return Format.table(header, body)
    }

    func growthTable() -> String {
        let header = ["series", "size", "blob", "mutation", "raw store", "ratio", "load (init)", "raw lookup", "ratio"]
        let body = growth.map { point -> [String] in
            [
                point.series == .entries ? "entries" : "value bytes",
                point.series == .entries ? Format.integer(point.parameter) : Format.bytes(Double(point.parameter)),
                Format.bytes(Double(point.blobBytes)),
                Format.duration(point.mutation.median), Format.duration(point.rawStore.median),
                "\(Format.ratio(point.mutation.median / point.rawStore.median))×",
                Format.duration(point.load.median), Format.duration(point.rawLookup.median),
                "\(Format.ratio(point.load.median / point.rawLookup.median))×",
            ]
        }
        return Format.table(header, body)
    }

    func stagesTable() -> String {
        let body = stages.map { [$0.name, Format.duration($0.stats.median), Format.duration($0.stats.p99), $0.note ?? ""] }
        return Format.table(["stage", "median", "p99", "note"], body)
    }

    // MARK: Files

    func writeJSON(to path: String) throws {
        try Files.writeJSON(self, to: path)
    }

    /// One line per growth point and operation; times in milliseconds.
    func growthCSV() -> String {
        var lines = [
            "series,parameter,blob_bytes,operation,securedictionary_median_ms,securedictionary_p99_ms,raw_median_ms,raw_p99_ms,ratio"
        ]
        for point in growth {
            for (operation, library, raw) in [
                ("mutation", point.mutation, point.rawStore), ("load", point.load, point.rawLookup),
            ] {
                let fields: [String] = [
                    point.series.rawValue, String(point.parameter), String(point.blobBytes), operation,
                    Format.fixed(library.median * 1000, 4), Format.fixed(library.p99 * 1000, 4),
                    Format.fixed(raw.median * 1000, 4), Format.fixed(raw.p99 * 1000, 4),
                    Format.fixed(library.median / raw.median, 3),
                ]
                lines.append(fields.joined(separator: ","))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

enum Files {
    /// Writes `data` to `path`, creating the parent folder.
    static func write(_ data: Data, to path: String) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url, options: .atomic)
    }

    /// Writes `value` to `path` as pretty-printed JSON with sorted keys.
    static func writeJSON(_ value: some Encodable, to path: String, endingWithNewline: Bool = false) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(value)
        if endingWithNewline { data.append(contentsOf: "\n".utf8) }
        try write(data, to: path)
    }
}

enum Format {
    /// 12.3 ns, 4.56 µs, 2.31 ms, 1.20 s.
    static func duration(_ seconds: Double) -> String {
        let magnitude = abs(seconds)
        if magnitude < 1e-6 { return "\(fixed(seconds * 1e9, magnitude < 1e-8 ? 2 : 1)) ns" }
        if magnitude < 1e-3 { return "\(fixed(seconds * 1e6, magnitude < 1e-5 ? 2 : 1)) µs" }
        if magnitude < 1 { return "\(fixed(seconds * 1e3, magnitude < 1e-2 ? 2 : 1)) ms" }
        return "\(fixed(seconds, 2)) s"
    }

    static func bytes(_ bytes: Double) -> String {
        if bytes < 1024 { return "\(Int(bytes)) B" }
        if bytes < 1024 * 1024 { return "\(fixed(bytes / 1024, bytes < 10 * 1024 ? 1 : 0)) KiB" }
        return "\(fixed(bytes / 1024 / 1024, 2)) MiB"
    }

    static func ratio(_ value: Double) -> String {
        value >= 100 ? fixed(value, 0) : value >= 10 ? fixed(value, 1) : fixed(value, 2)
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    static func integer(_ value: Int) -> String {
        let digits = String(value)
        var out = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return out
    }

    static func fixed(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value)
    }

    /// A Markdown-compatible table with aligned columns.
    static func table(_ header: [String], _ rows: [[String]]) -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            "| "
                + cells.enumerated().map { column, cell in
                    cell + String(repeating: " ", count: widths[column] - cell.count)
                }.joined(separator: " | ") + " |"
        }
        var lines = [line(header), "|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|"]
        lines += rows.map(line)
        return lines.joined(separator: "\n")
    }
}
