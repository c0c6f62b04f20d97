import Foundation

/// One line of the table: a figure measured against its target.
struct Row: Codable, Sendable {
    var scenario: String
    var check: String
    var target: String
    var measured: String
    var pass: Bool
    /// Why it failed, or what else is worth knowing (printed under the table).
    var note: String?
    /// A figure that is reported but never fails the run (e.g. what Swift cannot wipe).
    var tracked: Bool = false
}

/// Collects the rows of every scenario and prints them.
final class Report {
    private(set) var rows: [Row] = []
    let scenario: String

    init(scenario: String) { self.scenario = scenario }

    func add(_ check: String, target: String, measured: String, pass: Bool, note: String? = nil) {
        rows.append(Row(scenario: scenario, check: check, target: target, measured: measured, pass: pass, note: note))
        let mark = pass ? "PASS" : "FAIL"
        log("  [\(mark)] \(check): \(measured) (target \(target))\(note.map { " — \($0)" } ?? "")")
    }

    func tracked(_ check: String, measured: String, note: String? = nil) {
        rows.append(
            Row(
                scenario: scenario, check: check, target: "tracked", measured: measured, pass: true,
                note: note, tracked: true))
        log("  [info] \(check): \(measured)\(note.map { " — \($0)" } ?? "")")
    }

    /// A scenario that could not run is a failure with its reason, never a skip.
    func cannotRun(_ check: String, target: String, reason: String) {
        add(check, target: target, measured: "could not run", pass: false, note: reason)
    }
}

/// Progress goes to stderr, so stdout holds only the table.
func log(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

enum Table {
    static func render(_ rows: [Row]) -> String {
        let headers = ["scenario", "check", "target", "measured", "result"]
        let cells = rows.map { row in
            [row.scenario, row.check, row.target, row.measured, row.tracked ? "INFO" : (row.pass ? "PASS" : "FAIL")]
        }
        var widths = headers.map(\.count)
        for line in cells { for (index, cell) in line.enumerated() { widths[index] = max(widths[index], cell.count) } }
        func format(_ line: [String]) -> String {
            "| "
                + line.enumerated().map { index, cell in cell.padding(toLength: widths[index], withPad: " ", startingAt: 0) }
                .joined(separator: " | ") + " |"
        }
        var text = format(headers) + "\n"
        text += "|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|\n"
        for line in cells { text += format(line) + "\n" }
        return text
    }
}
