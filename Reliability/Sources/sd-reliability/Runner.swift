import Foundation

/// The scenarios, numbered as the rows of Reliability/README.md.
var scenarios: [(number: Int, title: String, run: (Harness, Report) -> Void)] {
    [
        (1, "1 lost updates", LostUpdates.run),
        (2, "2 fault positions", FaultPositionScenario.run),
        (3, "3 daemon dies", DaemonDies.run),
        (4, "4 unavailable/locked", UnavailableAndLocked.run),
        (5, "5 hostile blobs", HostileBlobs.run),
        (6, "6 size", SizeLimits.run),
        (7, "7 neighbours", Neighbours.run),
        (8, "8 no leaks", Secrecy.run),
        (9, "9 memory hygiene", MemoryHygiene.run),
        (10, "10 threads", Threads.run),
        (11, "11 writers not seen", OutsideWriters.run),
        (12, "12 fair waiting", FairWaiting.run),
        (13, "13 file stores", FileStores.run),
        (14, "14 frozen bus", FrozenBus.run),
        (15, "15 automatic store, keyring away", AutomaticRestart.run),
    ]
}

enum Runner {
    static let usage = """
        usage: sd-reliability [--full] [--json FILE] [--only N[,N…]] [--sanitize LIST] [--root DIR]

          --full       full size (the sizes of Reliability/README.md); default: the small CI size
          --json FILE  also write the rows, the size and the machine as JSON
          --only N,…   run only these scenarios (1–15)
          --sanitize L which sanitizers scenario 10 runs the unit tests under: thread,address,
                       or none (default: thread; --full: thread,address)
          --root DIR   the SecureDictionary repository (default: found from the current folder)

        Run it inside scripts/with-private-keyring; scripts/reliability does all of that.
        """

    static func main(_ arguments: [String]) -> Int32 {
        var full = false
        var jsonPath: String?
        var only: Set<Int>?
        var root: URL?
        var sanitizers: [String]?
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            func value() -> String? {
                index += 1
                return index < arguments.count ? arguments[index] : nil
            }
            switch argument {
            case "--full": full = true
            case "--json": jsonPath = value()
            case "--only": only = Set((value() ?? "").split(separator: ",").compactMap { Int($0) })
            case "--root": root = value().map { URL(fileURLWithPath: $0) }
            case "--sanitize":
                sanitizers = (value() ?? "").split(separator: ",").map(String.init).filter { $0 != "none" }
            case "-h", "--help":
                print(usage)
                return 0
            default:
                log("sd-reliability: unknown argument '\(argument)'\n\(usage)")
                return 2
            }
            index += 1
        }
        guard let root = root ?? findRoot() else {
            log("sd-reliability: cannot find the repository (scripts/keyring-daemon); pass --root")
            return 2
        }
        let sizes = Sizes(full: full, sanitizerOverride: sanitizers)
        let harness: Harness
        do { harness = try Harness(root: root, sizes: sizes) } catch {
            log("sd-reliability: \(error)")
            return 2
        }
        let machine = Machine.describe()
        let revision = Machine.revision(root)
        log("sd-reliability: \(full ? "full" : "small") size, library \(revision), on \(machine)")
        let clock = ContinuousClock()
        let started = clock.now
        var rows: [Row] = []
        var durations: [String: Double] = [:]
        for scenario in scenarios where only?.contains(scenario.number) ?? true {
            log("== \(scenario.title)")
            let report = Report(scenario: scenario.title)
            let start = clock.now
            scenario.run(harness, report)
            let seconds = (clock.now - start) / .seconds(1)
            durations[scenario.title] = seconds
            log(String(format: "   (%.1f s)", seconds))
            let removed = harness.removeScenarioItems()
            if removed > 0 { log("   (\(removed) items it left removed from the keyring)") }
            if report.rows.isEmpty {
                report.add("scenario produced no figure", target: "≥ 1 row", measured: "0 rows", pass: false)
            }
            rows += report.rows
        }
        let total = (clock.now - started) / .seconds(1)
        let failed = rows.filter { !$0.pass && !$0.tracked }
        print("\nSecureDictionary reliability, \(full ? "full" : "small") size — library \(revision) — \(machine)\n")
        print(Table.render(rows))
        for row in rows where !row.pass && !row.tracked {
            print("FAIL \(row.scenario) / \(row.check): \(row.note ?? row.measured)")
        }
        let summary = "\(rows.count - failed.count) passed, \(failed.count) failed"
        print(String(format: "\n%@ in %.0f s", summary, total))
        if let jsonPath {
            let document = JSONReport(
                size: full ? "full" : "small", machine: machine, revision: revision,
                date: ISO8601DateFormatter().string(from: Date()),
                seconds: total, scenarioSeconds: durations, rows: rows)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            do { try encoder.encode(document).write(to: URL(fileURLWithPath: jsonPath)) } catch {
                log("sd-reliability: cannot write \(jsonPath): \(error)")
                return 1
            }
        }
        return failed.isEmpty ? 0 : 1
    }

    static func findRoot() -> URL? {
        var url = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("scripts/keyring-daemon").path) { return url }
            url.deleteLastPathComponent()
        }
        return nil
    }
}

struct JSONReport: Codable {
    var size: String
    var machine: String
    var revision: String
    var date: String
    var seconds: Double
    var scenarioSeconds: [String: Double]
    var rows: [Row]
}

enum Machine {
    /// The commit under test, and whether the library's sources differ from it.
    static func revision(_ root: URL) -> String {
        let head = Subprocess.run(
            "/usr/bin/env", ["git", "-C", root.path, "rev-parse", "--short", "HEAD"], timeout: .seconds(10))
        guard head.succeeded else { return "unknown commit" }
        let dirty = Subprocess.run(
            "/usr/bin/env", ["git", "-C", root.path, "status", "--porcelain", "--", "Sources", "Package.swift"],
            timeout: .seconds(10))
        return head.text.trimmingCharacters(in: .whitespacesAndNewlines) + (dirty.text.isEmpty ? "" : " (modified)")
    }

    static func describe() -> String {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" } ?? "?"
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let memory = ProcessInfo.processInfo.physicalMemory >> 30
        let osRelease = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8)) ?? ""
        let os =
            osRelease.split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }
            .map { $0.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) } ?? "Linux"
        return "\(os), \(cores) cores (\(model)), \(memory) GiB"
    }
}
