import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// Scenario 4: no bus, no Secret Service, a locked collection, a lock in the middle of a write.
enum UnavailableAndLocked {
    static func run(_ harness: Harness, _ report: Report) {
        noBus(harness, report)
        noService(harness, report)
        guard harness.hasKeyring(report, check: "locked collection", target: "locked ≤ 1 s") else { return }
        locked(harness, report)
        lockedBetweenReadAndWrite(harness, report)
    }

    static func probe(_ result: ProcessResult, expected: String, limit: Double, _ check: String, _ report: Report) {
        let target = "\(expected) ≤ \(Int(limit)) ms"
        guard let reply = WorkerReply.parse(result) else {
            report.add(
                check, target: target, measured: "worker \(result.how)", pass: false,
                note: String(result.stderr.suffix(300)))
            return
        }
        let milliseconds = reply.milliseconds ?? .infinity
        let outcome = reply.outcome == "ok" ? "opened (\(reply.count ?? 0) entries)" : (reply.error ?? "?")
        report.add(
            check, target: target, measured: "\(outcome) in \(formatMilliseconds(milliseconds))",
            pass: reply.error == expected && milliseconds <= limit)
    }

    static func noBus(_ harness: Harness, _ report: Report) {
        let result = harness.worker(
            ["open", "rel.nobus", "nobus", "3000"],
            environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/sd-reliability/bus"])
        probe(result, expected: "serviceUnavailable", limit: 100, "no session bus (address points nowhere)", report)
        let unset = harness.worker(
            ["open", "rel.nobus", "nobus", "3000"],
            environment: ["DBUS_SESSION_BUS_ADDRESS": nil, "DISPLAY": nil, "XDG_RUNTIME_DIR": nil])
        probe(unset, expected: "serviceUnavailable", limit: 100, "no session bus (variable unset)", report)
    }

    static func noService(_ harness: Harness, _ report: Report) {
        // A private bus of its own with nothing on it (and no D-Bus activation).
        let result = Subprocess.run(
            harness.script("with-private-keyring"),
            ["--no-keyring", "--", harness.executable, "worker", "open", "rel.noservice", "x", "3000"],
            timeout: .seconds(60))
        probe(result, expected: "serviceUnavailable", limit: 1_000, "bus without a Secret Service", report)
        // And on our own bus, with the daemon stopped.
        if harness.keyringMissing == nil {
            if harness.daemon("stop").succeeded {
                let stopped = harness.worker(["open", "rel.stopped", "x", "3000"])
                harness.daemon("start")
                probe(stopped, expected: "serviceUnavailable", limit: 1_000, "daemon stopped (name has no owner)", report)
            } else {
                report.cannotRun("daemon stopped", target: "serviceUnavailable ≤ 1000 ms", reason: "keyring-daemon stop failed")
            }
        }
    }

    static func timed(_ body: () throws -> Void) -> (outcome: String, milliseconds: Double) {
        let start = ContinuousClock.now
        do {
            try body()
            return ("no error", elapsedMilliseconds(since: start))
        } catch {
            return (caseName(error), elapsedMilliseconds(since: start))
        }
    }

    static func locked(_ harness: Harness, _ report: Report) {
        let app = harness.appID("locked")
        let target = "locked ≤ 1000 ms"
        do {
            let fixture = try harness.fixture()
            let item = try KeyringItem(dictionaryName: "locked", applicationID: app)
            let writer = try SecureDictionary(name: "locked", applicationID: app, options: .init(store: SecretServiceStore()))
            try writer.update { $0 = ["k": "before", "n": 1, "d": .data(Data([0, 1, 2]))] }
            let reader = try SecureDictionary(name: "locked", applicationID: app, options: .init(store: SecretServiceStore()))
            let digest = try fixture.sha256(item.attributes)
            let snapshot = writer.snapshot
            guard harness.daemon("lock").succeeded else {
                report.cannotRun("locked collection", target: target, reason: "keyring-daemon lock failed")
                return
            }
            var unlocked = false
            defer { if !unlocked { harness.daemon("unlock") } }

            var results: [(String, (outcome: String, milliseconds: Double))] = []
            results.append(
                (
                    "init of the item",
                    timed {
                        _ = try SecureDictionary(name: "locked", applicationID: app, options: .init(store: SecretServiceStore()))
                    }
                ))
            results.append(
                (
                    "init of an item never written",
                    timed {
                        _ = try SecureDictionary(name: "never", applicationID: app, options: .init(store: SecretServiceStore()))
                    }
                ))
            results.append(("reload()", timed { try reader.reload() }))
            results.append(("write", timed { try writer.setValue("after", forKey: "k") }))
            results.append(("removeAll()", timed { try writer.removeAll() }))
            results.append(
                (
                    "delete()",
                    timed {
                        _ = try SecureDictionary.delete(
                            name: "locked", applicationID: app, options: .init(store: SecretServiceStore()))
                    }
                ))
            for (what, result) in results {
                report.add(
                    "locked collection: \(what)", target: target,
                    measured: "\(result.outcome) in \(formatMilliseconds(result.milliseconds))",
                    pass: result.outcome == "locked" && result.milliseconds <= 1_000)
            }
            let cacheKept = writer.snapshot == snapshot
            harness.daemon("unlock")
            unlocked = true
            let after = try fixture.sha256(item.attributes)
            let reopened = try SecureDictionary(name: "locked", applicationID: app, options: .init(store: SecretServiceStore()))
            let resumedRead = try reader.value(forKey: "k") == "before" && reopened.snapshot == snapshot
            try writer.setValue("after", forKey: "k")
            let resumedWrite =
                try SecureDictionary(
                    name: "locked", applicationID: app,
                    options: .init(store: SecretServiceStore()))["k"] == "after"
            report.add(
                "after unlock: item byte-identical, reads and writes resume",
                target: "same SHA-256, cache kept, read + write OK",
                measured: "SHA-256 \(after == digest ? "identical" : "CHANGED"), cache \(cacheKept ? "kept" : "CHANGED"), "
                    + "read \(resumedRead ? "OK" : "FAILED"), write \(resumedWrite ? "OK" : "FAILED")",
                pass: after == digest && cacheKept && resumedRead && resumedWrite)
        } catch {
            report.add("locked collection", target: target, measured: "error: \(error)", pass: false)
        }
    }

    /// The collection is locked by the update closure itself: after the read, before the write.
    static func lockedBetweenReadAndWrite(_ harness: Harness, _ report: Report) {
        let app = harness.appID("midlock")
        let check = "locked between the read and the write of update {}"
        let target = "locked, cache rolled back, item untouched"
        do {
            let fixture = try harness.fixture()
            let item = try KeyringItem(dictionaryName: "midlock", applicationID: app)
            let dictionary = try SecureDictionary(
                name: "midlock", applicationID: app, options: .init(store: SecretServiceStore()))
            try dictionary.update { $0 = ["k": "before", "n": 1] }
            let digest = try fixture.sha256(item.attributes)
            let before = dictionary.snapshot
            var lockedInside = false
            var thrown = "no error"
            do {
                try dictionary.update { entries in
                    entries["k"] = "changed"
                    entries["new"] = true
                    lockedInside = harness.daemon("lock").succeeded
                }
            } catch {
                thrown = caseName(error)
            }
            let cache = dictionary.snapshot
            harness.daemon("unlock")
            let after = try fixture.sha256(item.attributes)
            report.add(
                check, target: target,
                measured: "\(thrown); cache \(cache == before ? "rolled back" : "CHANGED"); "
                    + "item \(after == digest ? "untouched" : "CHANGED")",
                pass: lockedInside && thrown == "locked" && cache == before && after == digest,
                note: lockedInside ? nil : "the lock inside the closure failed")
        } catch {
            harness.daemon("unlock")
            report.add(check, target: target, measured: "error: \(error)", pass: false)
        }
    }
}
