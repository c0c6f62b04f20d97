import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// Scenario 1: writers in several processes, two instances each, lose nothing.
enum LostUpdates {
    static func run(_ harness: Harness, _ report: Report) {
        guard harness.hasKeyring(report, check: "processes × mutations", target: "0 lost, 0 phantom") else { return }
        manyProcesses(harness, report)
        loadOtherWritesThenWrite(harness, report)
    }

    static func manyProcesses(_ harness: Harness, _ report: Report) {
        let sizes = harness.sizes
        let app = harness.appID("lost")
        let name = "shared"
        let check =
            "\(sizes.lostProcesses) processes × 2 instances × \(sizes.lostMutations) mutations + \(sizes.lostIncrements) increments"
        let target = "0 lost, 0 phantom, counter == increments, 0 errors"
        var writers: [LiveChild] = []
        for index in 0..<sizes.lostProcesses {
            do {
                writers.append(
                    try harness.liveWorker([
                        "lost-writer", app, name, "\(index)", "\(sizes.lostMutations)", "\(sizes.lostIncrements)",
                        "\(0xC0FFEE + index)",
                    ]))
            } catch {
                report.cannotRun(check, target: target, reason: "cannot start a writer: \(error)")
                return
            }
        }
        let outcome = collect(writers, app: app, name: name)
        report.add(
            check, target: target, measured: outcome.summary,
            pass: outcome.passes(expectedIncrements: sizes.lostProcesses * sizes.lostIncrements), note: outcome.firstError)
    }

    /// What `lost-writer` processes expected, against a fresh load of the item.
    struct Outcome {
        var expectedKeys = 0, removed = 0, lost = 0, wrong = 0, phantom = 0, counter = -1, increments = 0
        var errors: [String] = []
        var firstError: String? { errors.first }

        var summary: String {
            "\(expectedKeys) keys expected (\(removed) removed): \(lost) lost, \(wrong) wrong value, "
                + "\(phantom) phantom; counter \(counter) of \(increments) increments; \(errors.count) errors"
        }

        func passes(expectedIncrements: Int) -> Bool {
            lost == 0 && wrong == 0 && phantom == 0 && counter == increments && errors.isEmpty && increments == expectedIncrements
        }
    }

    /// Waits for the writers, merges the models they printed, and compares with a fresh load.
    static func collect(_ writers: [LiveChild], app: String, name: String) -> Outcome {
        var outcome = Outcome()
        var expected: [String: PropertyListValue] = [:]
        var removed: Set<String> = []
        for writer in writers {
            let result = writer.finish(timeout: .seconds(600))
            guard result.succeeded, let reply = WorkerReply.parse(result), let blob = reply.detail,
                let data = Data(base64Encoded: blob), let model = try? BinaryPropertyListCoding.decode(data)
            else {
                outcome.errors.append("writer \(result.how): \(result.stderr.suffix(300))")
                continue
            }
            for (key, value) in model {
                if key.hasPrefix("removed:") {
                    removed.insert(String(key.dropFirst("removed:".count)))
                } else {
                    expected[key] = value
                }
            }
            outcome.increments += reply.count ?? 0
            if let error = reply.error { outcome.errors.append(error) }
        }
        let fresh: [String: PropertyListValue]
        do {
            fresh = try SecureDictionary(name: name, applicationID: app, options: .init(store: SecretServiceStore())).snapshot
        } catch {
            outcome.errors.append("fresh read failed: \(caseName(error))")
            return outcome
        }
        for (key, value) in expected {
            if let found = fresh[key] { if found != value { outcome.wrong += 1 } } else { outcome.lost += 1 }
        }
        outcome.phantom = fresh.keys.filter { $0 != "counter" && expected[$0] == nil }.count
        outcome.counter = fresh["counter"]?.integerValue ?? (outcome.increments == 0 ? 0 : -1)
        outcome.expectedKeys = expected.count
        outcome.removed = removed.count
        return outcome
    }

    /// Instance A loads; another process adds X; A adds Y; both survive.
    static func loadOtherWritesThenWrite(_ harness: Harness, _ report: Report) {
        let app = harness.appID("xy")
        let check = "A loads, other process adds X, A adds Y"
        do {
            let a = try SecureDictionary(name: "xy", applicationID: app, options: .init(store: SecretServiceStore()))
            try a.setValue("a0", forKey: "a")
            let other = harness.worker(["set", app, "xy", "x", "from-other"])
            guard other.succeeded else {
                report.add(
                    check, target: "X and Y both kept", measured: "other process \(other.how)", pass: false,
                    note: other.stderr)
                return
            }
            try a.setValue("from-a", forKey: "y")
            let fresh = try SecureDictionary(name: "xy", applicationID: app, options: .init(store: SecretServiceStore()))
            let kept = ["x": fresh["x"] == "from-other", "y": fresh["y"] == "from-a", "a": fresh["a"] == "a0"]
            let seenByA = a["x"] == "from-other"
            report.add(
                check, target: "X and Y both kept",
                measured: "X \(kept["x"]! ? "kept" : "LOST"), Y \(kept["y"]! ? "kept" : "LOST"), "
                    + "A sees X: \(seenByA ? "yes" : "no")",
                pass: kept.values.allSatisfy { $0 } && seenByA)
        } catch {
            report.add(check, target: "X and Y both kept", measured: "error \(caseName(error))", pass: false)
        }
    }
}

extension Worker {
    /// `lost-writer APP NAME INDEX MUTATIONS INCREMENTS SEED`: two instances of one item,
    /// used at random; distinct keys of its own with small random values, some removals, a
    /// shared counter in `update {}`, jitter. Prints the model it expects (a base64 bplist,
    /// removed keys as `removed:<key>`), the increments done, and the first error.
    static func lostWriter(_ arguments: [String]) {
        guard arguments.count == 6, let index = Int(arguments[2]), let mutations = Int(arguments[3]),
            let increments = Int(arguments[4]), let seed = UInt64(arguments[5])
        else { usage() }
        let (app, name) = (arguments[0], arguments[1])
        var generator = SplitMix64(seed: seed)
        var model: [String: PropertyListValue] = [:]
        var removed: Set<String> = []
        var done = 0
        var firstError: String?
        var errorCount = 0
        do {
            let options = SecureDictionary.Options(timeout: .seconds(30))
            let instances = try (0..<2).map { _ in try SecureDictionary(name: name, applicationID: app, options: options) }
            var operations: [Bool] = Array(repeating: true, count: mutations) + Array(repeating: false, count: increments)
            operations.shuffle(using: &generator)
            var next = 0
            for isMutation in operations {
                let dictionary = instances[Int.random(in: 0..<2, using: &generator)]
                do {
                    if !isMutation {
                        try dictionary.update { entries in
                            entries["counter"] = .integer((entries["counter"]?.integerValue ?? 0) + 1)
                        }
                        done += 1
                    } else if let victim = model.keys.sorted().randomElement(using: &generator),
                        Int.random(in: 0..<5, using: &generator) == 0
                    {
                        try dictionary.removeValue(forKey: victim)
                        model[victim] = nil
                        removed.insert(victim)
                    } else {
                        let key = "p\(index)-\(next)"
                        next += 1
                        let value: PropertyListValue =
                            switch Int.random(in: 0..<3, using: &generator) {
                            case 0: .integer(Int.random(in: -1_000...1_000, using: &generator))
                            case 1: .string(String(Int.random(in: 0...Int.max, using: &generator), radix: 36))
                            default: .data(Data(randomBytes(Int.random(in: 0...16, using: &generator), using: &generator)))
                            }
                        try dictionary.setValue(value, forKey: key)
                        model[key] = value
                    }
                } catch {
                    errorCount += 1
                    if firstError == nil { firstError = "process \(index): \(caseName(error))" }
                }
                usleep(UInt32.random(in: 0...3_000, using: &generator))  // jitter
            }
        } catch {
            firstError = "process \(index): open failed: \(caseName(error))"
        }
        for key in removed { model["removed:\(key)"] = true }
        let blob = (try? BinaryPropertyListCoding.encode(model, maximumSize: .max)) ?? Data()
        WorkerReply(
            outcome: firstError == nil ? "ok" : "error",
            error: firstError.map { "\($0) (\(errorCount) errors)" },
            count: done, detail: blob.base64EncodedString()
        ).print()
    }

    /// `set APP NAME KEY VALUE`: one setValue.
    static func set(_ arguments: [String]) {
        guard arguments.count == 4 else { usage() }
        do {
            let dictionary = try SecureDictionary(name: arguments[1], applicationID: arguments[0])
            try dictionary.setValue(.string(arguments[3]), forKey: arguments[2])
            WorkerReply(outcome: "ok").print()
        } catch {
            WorkerReply(outcome: "error", error: caseName(error)).print()
            exit(1)
        }
    }
}
