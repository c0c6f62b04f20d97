import Foundation
import Logging
import SecureDictionary
import SecureDictionaryTestSupport
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Scenario 8: canary keys and values, built at run time, go through every API and every
/// error path in a worker process; they must never show up in its stdout/stderr, in a
/// swift-log handler at trace level, in description/debugDescription/dump/Mirror, in error
/// messages, or on the bus (dbus-monitor, with a positive control planted in plain text).
enum Secrecy {
    static func alphanumeric(_ count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<count).map { _ in alphabet.randomElement()! })
    }

    /// The canary and the encodings a careless message or transport might use.
    static func forms(_ text: String) -> [(String, [UInt8])] {
        let bytes = Array(text.utf8)
        var result: [(String, [UInt8])] = [
            ("raw", bytes), ("hex", Array(hex(bytes).utf8)),
            ("HEX", Array(hex(bytes).uppercased().utf8)),
        ]
        for shift in 0..<3 {
            // base64 of the canary at each alignment inside a longer text, minus the edges.
            let encoded = Data(bytes.dropFirst(shift)).base64EncodedString()
            result.append(("base64+\(shift)", Array(encoded.dropLast(4).utf8)))
        }
        result.append(("UTF-16BE", Array(text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })))
        result.append(("UTF-16LE", Array(text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })))
        return result
    }

    static func count(_ canaries: [String], in data: Data) -> (total: Int, which: [String]) {
        var total = 0
        var which: [String] = []
        for (index, canary) in canaries.enumerated() {
            for (form, bytes) in forms(canary) {
                let found = occurrences(of: bytes, in: data)
                if found > 0 { which.append("\(index == 0 ? "key" : "value") as \(form)") }
                total += found
            }
        }
        return (total, which)
    }

    static func run(_ harness: Harness, _ report: Report) {
        guard harness.hasKeyring(report, check: "secrets never leak", target: "0 occurrences") else { return }
        let canaryKey = "ck" + alphanumeric(30)
        let canaryValue = "cv" + alphanumeric(46)
        let canaries = [canaryKey, canaryValue]
        let app = harness.appID("secrecy")
        let canaryFile = harness.scratchFile("secrecy-canary")
        let logFile = harness.scratchFile("secrecy-log")
        let renderFile = harness.scratchFile("secrecy-renderings")
        let busFile = harness.scratchFile("secrecy-bus.bin")
        let fixture: FixtureServer
        do {
            try Data("\(canaryKey)\n\(canaryValue)\n".utf8).write(to: canaryFile)
            fixture = try harness.fixture()
            // Hostile items holding the canary, planted before the bus is watched (the fixture
            // uses a plain session: these bytes cross the bus in clear).
            let corrupt = try KeyringItem(dictionaryName: "corrupt", applicationID: app)
            try fixture.plant(
                Array("bplist00".utf8) + Array(canaryKey.utf8) + Array(canaryValue.utf8) + [UInt8](repeating: 0xFF, count: 40),
                for: corrupt)
            let ambiguous = try KeyringItem(dictionaryName: "ambiguous", applicationID: app)
            let valid = [UInt8](try BinaryPropertyListCoding.encode([canaryKey: .string(canaryValue)]))
            try fixture.plant(valid, for: ambiguous)
            try fixture.plant(valid, for: ambiguous, replace: false)
        } catch {
            report.cannotRun("secrets never leak", target: "0 occurrences", reason: "setup: \(error)")
            return
        }

        // Watch the bus.
        let monitor = try? Spawn.start(
            "/usr/bin/dbus-monitor", ["--session", "--binary"], environment: ProcessInfo.processInfo.environment,
            standardInput: .null, standardOutput: .file(busFile.path), standardError: .null, keepsOtherDescriptors: false)
        usleep(300_000)
        let monitoring = monitor.map { waitpid($0, nil, WNOHANG) == 0 } ?? false
        let control = ["control-before-" + alphanumeric(24), "control-after-" + alphanumeric(24)]
        let controlItem = ["application": app, "purpose": "positive control"]
        _ = try? fixture.plant(Array(control[0].utf8), attributes: controlItem, label: "control")

        let result = harness.worker(["secrecy", app, canaryFile.path, logFile.path, renderFile.path], timeout: .seconds(300))

        _ = try? fixture.plant(Array(control[1].utf8), attributes: controlItem, label: "control")
        usleep(300_000)
        if let monitor, monitoring {
            kill(monitor, SIGTERM)
            while waitpid(monitor, nil, 0) < 0 && errno == EINTR {}
        }
        _ = try? fixture.delete(controlItem)
        for name in ["canary", "corrupt", "ambiguous", "big", "deep", "async"] {
            if let item = try? KeyringItem(dictionaryName: name, applicationID: app) { _ = try? fixture.delete(item.attributes) }
        }
        if harness.daemon("pid").succeeded == false { harness.daemon("restart") }
        harness.daemon("thaw")
        harness.daemon("unlock")

        let reply = WorkerReply.parse(result)
        if !result.succeeded || reply == nil {
            report.add(
                "the canary workload", target: "runs to the end", measured: "worker \(result.how)", pass: false,
                note: String((result.lastLine + " " + result.stderr).suffix(300)))
        } else if let reply {
            report.add(
                "the canary workload", target: "every API and error path ran",
                measured: reply.detail ?? "?", pass: reply.outcome == "ok", note: reply.error)
        }
        let outputs = result.stdout + result.stderrBytes
        let inOutputs = count(canaries, in: outputs)
        report.add(
            "stdout + stderr of the process", target: "0 occurrences",
            measured: "\(inOutputs.total) occurrences in \(outputs.count) B", pass: inOutputs.total == 0,
            note: inOutputs.which.first)
        let logs = (try? Data(contentsOf: logFile)) ?? Data()
        let records = logs.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
        let inLogs = count(canaries, in: logs)
        report.add(
            "swift-log handler at trace level", target: "0 occurrences (and records seen)",
            measured: "\(inLogs.total) occurrences in \(records) records", pass: inLogs.total == 0 && records > 0,
            note: inLogs.which.first)
        let renderings = (try? Data(contentsOf: renderFile)) ?? Data()
        let sections = String(decoding: renderings, as: UTF8.self).components(separatedBy: "\n=== ")
        var leaking: [String] = []
        var renderTotal = 0
        var errorTotal = 0
        var errorSections = 0
        for section in sections.dropFirst() {
            let title = String(section.prefix { $0 != "\n" })
            let found = count(canaries, in: Data(section.utf8))
            if title.hasPrefix("error") {
                errorSections += 1
                errorTotal += found.total
            } else {
                renderTotal += found.total
            }
            if found.total > 0 { leaking.append("\(title) (\(found.which.joined(separator: ", ")))") }
        }
        let renderSections = sections.count - 1 - errorSections
        report.add(
            "description, debugDescription, dump, Mirror", target: "0 occurrences",
            measured: "\(renderTotal) occurrences in \(renderSections) renderings", pass: renderTotal == 0 && renderSections > 10,
            note: leaking.filter { !$0.hasPrefix("error") }.isEmpty
                ? nil
                : "leaking: " + leaking.filter { !$0.hasPrefix("error") }.joined(separator: "; "))
        report.add(
            "error messages (description, reflecting, dump, localizedDescription)", target: "0 occurrences",
            measured: "\(errorTotal) occurrences in \(errorSections) errors", pass: errorTotal == 0 && errorSections > 5,
            note: leaking.first { $0.hasPrefix("error") })

        let bus = (try? Data(contentsOf: busFile)) ?? Data()
        let onBus = count(canaries, in: bus)
        let controlsSeen = control.filter { occurrences(of: $0, in: bus) > 0 }.count
        if !monitoring || controlsSeen < 2 {
            report.add(
                "D-Bus traffic (dbus-monitor --binary)", target: "0 occurrences; positive controls seen",
                measured: monitoring ? "\(controlsSeen) of 2 controls seen: the capture is void" : "dbus-monitor did not run",
                pass: false)
        } else {
            report.add(
                "D-Bus traffic (dbus-monitor --binary)", target: "0 occurrences; positive controls seen",
                measured: "\(onBus.total) occurrences in \(bus.count / 1024) KiB captured; 2 of 2 controls seen",
                pass: onBus.total == 0, note: onBus.which.first)
        }
    }
}
