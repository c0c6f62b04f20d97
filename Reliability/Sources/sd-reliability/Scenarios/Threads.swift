import Foundation
import Logging
import SecureDictionary
import SecureDictionaryTestSupport
import Synchronization

/// Scenario 10: 16 threads of mixed operations on one instance and on 4 instances of one
/// item end in exactly the sequential model's state; and the unit tests under the sanitizers.
enum Threads {
    static let threads = 16

    static func run(_ harness: Harness, _ report: Report) {
        for instances in [1, 4] {
            hammer(instances: instances, operations: harness.sizes.threadOperations, report)
        }
        for sanitizer in ["thread", "address"] {
            if harness.sizes.sanitizers.contains(sanitizer) {
                sanitize(sanitizer, harness, report)
            }
        }
    }

    static func hammer(instances count: Int, operations: Int, _ report: Report) {
        let check = "\(threads) threads × \(operations) mixed operations on \(count) instance\(count == 1 ? "" : "s")"
        let target = "final state == sequential model, reads see own writes"
        let store = InMemoryKeyringStore()
        let logger = Logger(label: "threads") { _ in SwiftLogNoOpLogHandler() }
        let options = SecureDictionary.Options(store: store, failureHandler: { _ in }, logger: logger)
        let instances: [SecureDictionary]
        do {
            instances = try (0..<count).map { _ in
                try SecureDictionary(name: "threads", applicationID: "rel.threads.\(count)", options: options)
            }
        } catch {
            report.add(check, target: target, measured: "open failed: \(error)", pass: false)
            return
        }
        let problems = Mutex<[String]>([])
        let models = Mutex<[Int: [String: PropertyListValue]]>([:])
        let increments = Mutex(0)
        let start = ContinuousClock.now
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var generator = SplitMix64(seed: UInt64(thread) &* 7_919)
            var model: [String: PropertyListValue] = [:]
            var done = 0
            func problem(_ text: String) { problems.withLock { $0.append("thread \(thread): \(text)") } }
            for operation in 0..<operations {
                let dictionary = instances[Int.random(in: 0..<instances.count, using: &generator)]
                let key = "t\(thread)-\(Int.random(in: 0..<8, using: &generator))"
                do {
                    switch Int.random(in: 0..<10, using: &generator) {
                    case 0...2:
                        let value = PropertyListValue.integer(operation)
                        try dictionary.setValue(value, forKey: key)
                        model[key] = value
                    case 3:
                        let value = PropertyListValue.data(Data(randomBytes(8, using: &generator)))
                        dictionary[key] = value
                        model[key] = value
                    case 4:
                        try dictionary.removeValue(forKey: key)
                        model[key] = nil
                    case 5, 6:
                        try dictionary.update { entries in
                            entries["counter"] = .integer((entries["counter"]?.integerValue ?? 0) + 1)
                            entries[key] = .string("u\(operation)")
                        }
                        model[key] = .string("u\(operation)")
                        done += 1
                    case 7:
                        if dictionary[key] != model[key] { problem("read of its own key differs from its model") }
                    case 8:
                        let snapshot = dictionary.snapshot
                        for (key, value) in model where snapshot[key] != value { problem("snapshot differs at \(key)") }
                    default:
                        if try dictionary.value(forKey: key) != model[key] { problem("value(forKey:) differs from its model") }
                    }
                } catch {
                    problem("error \(caseName(error))")
                }
            }
            models.withLock { $0[thread] = model }
            increments.withLock { $0 += done }
        }
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        var expected: [String: PropertyListValue] = [:]
        for (_, model) in models.withLock({ $0 }) { expected.merge(model) { first, _ in first } }
        let total = increments.withLock { $0 }
        if total > 0 { expected["counter"] = .integer(total) }
        let stored = store.storedBlob(of: instances[0].item).flatMap { try? BinaryPropertyListCoding.decode(Data($0)) }
        let found = problems.withLock { $0 }
        let cacheMatches = instances.allSatisfy { $0.snapshot == expected }
        report.add(
            check, target: target,
            measured: String(
                format: "store %@, caches %@, %d read/op problems (%.1f s)",
                stored == expected ? "== model" : "!= model", cacheMatches ? "== model" : "!= model",
                found.count, seconds),
            pass: stored == expected && cacheMatches && found.isEmpty, note: found.first)
    }

    /// `swift test --sanitize=…` on the library's unit tests (the SecureDictionaryTests target:
    /// not the keyring, CLI or other targets).
    static func sanitize(_ sanitizer: String, _ harness: Harness, _ report: Report) {
        let check =
            "unit tests under swift test --sanitize=\(sanitizer)"
            + (harness.sizes.full ? " --no-parallel" : " (parallel; 1 wall-clock test skipped)")
        let scratch = harness.root.appendingPathComponent("Reliability/.build-\(sanitizer)").path
        let start = ContinuousClock.now
        let suppressions = harness.root.appendingPathComponent("Reliability/tsan-suppressions.txt").path
        // Full size: --no-parallel, as scripts/test, nothing skipped (~3 min of tests under
        // TSan: many tests wait on clocks). Small size: in parallel (~20 s), skipping the one
        // test that bounds wall-clock time, which two cores shared by TSan-slowed tests break.
        var arguments = [
            "swift", "test", "--package-path", harness.root.path, "--scratch-path", scratch,
            "--sanitize=\(sanitizer)", "--filter", "^SecureDictionaryTests\\.",
        ]
        let skippedTiming = "cancellationEndsTheWaitAndKeepsCacheEqualToStore"
        if harness.sizes.full { arguments.append("--no-parallel") } else { arguments += ["--skip", skippedTiming] }
        let result = Subprocess.run(
            "/usr/bin/env", arguments,
            environment: [
                "TSAN_OPTIONS": "halt_on_error=0 print_suppressions=1 suppressions=\(suppressions)",
                "ASAN_OPTIONS": "detect_leaks=0",
            ],
            timeout: .seconds(3_600))
        let minutes = ((ContinuousClock.now - start) / .seconds(1)) / 60
        let output = result.text + result.stderr
        let reports =
            occurrences(of: "WARNING: ThreadSanitizer", in: Data(output.utf8))
            + occurrences(of: "ERROR: AddressSanitizer", in: Data(output.utf8))
        // "ThreadSanitizer: Matched 2 suppressions (pid=…):" then "2 race:…" lines.
        let suppressed = output.split(separator: "\n").filter { $0.contains("race:") || $0.contains("race_top:") }
            .compactMap { Int($0.trimmingCharacters(in: .whitespaces).prefix { $0.isNumber }) }.reduce(0, +)
        let summaries = output.split(separator: "\n").filter { $0.hasPrefix("SUMMARY:") }.map { String($0.prefix(160)) }
        let failedTests = output.split(separator: "\n").filter { $0.contains("✘ Test ") && $0.contains("recorded an issue") }
            .map { String($0.prefix(200)) }
        let summary =
            output.split(separator: "\n").last { $0.contains("Test run with") || $0.contains("Executed") }
            .map(String.init) ?? "no test summary"
        let logFile = harness.scratchFile("sanitize-\(sanitizer).log")
        try? Data(output.utf8).write(to: logFile)
        let kept = harness.root.appendingPathComponent("Reliability/.build-\(sanitizer)/last-run.log")
        try? Data(output.utf8).write(to: kept)
        report.add(
            check, target: "0 sanitizer reports, tests pass",
            measured: String(
                format: "%d reports (%d suppressed false positives), %@ (%@; %.1f min incl. build)",
                reports, suppressed, result.how, summary.trimmingCharacters(in: .whitespaces), minutes),
            pass: reports == 0 && result.succeeded,
            note: reports > 0 || !result.succeeded
                ? ((summaries.first ?? failedTests.first ?? "see the log") + " — log: \(kept.path)") : nil)
    }
}
