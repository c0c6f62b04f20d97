import Foundation
import Logging
import SecureDictionary
import SecureDictionaryTestSupport
import Synchronization

/// Scenario 12: writers are served in turn, one deadline bounds a whole call, and a
/// stuck lock holder is named.
enum FairWaiting {
    static func run(_ harness: Harness, _ report: Report) {
        guard harness.hasKeyring(report, check: "fair waiting", target: "0 timedOut") else { return }
        guard let single = medianSingleWrite(harness, report) else { return }
        manyBackToBackWriters(harness, report, single: single)
        occasionalWriterBesideBusyOnes(harness, report, single: single)
        threadsAgainstAFrozenDaemon(harness, report)
        stoppedLockHolder(harness, report)
    }

    /// The yardstick: one process alone making, back to back, as many writes as all the busy
    /// writers below together, on a dictionary of the same size.
    ///
    /// Both dictionaries are filled first with every key the writes will set (to -1), so that
    /// their size stays the same throughout (1,600 entries at the full size): a write costs
    /// more on a larger dictionary, and the comparison must not mix sizes.
    static func medianSingleWrite(_ harness: Harness, _ report: Report) -> Double? {
        let writes = harness.sizes.fairProcesses * harness.sizes.fairWrites
        let app = harness.appID("alone")
        let check = "one writer alone, \(writes) back-to-back writes on a \(writes)-entry dictionary (the yardstick)"
        do {
            try prefill(app, keys: (0..<writes).map { "alone-\($0)" })
        } catch {
            report.add(check, target: "measured", measured: "cannot fill the dictionary: \(caseName(error))", pass: false)
            return nil
        }
        let result = harness.worker(["burst", app, "fair", "alone", "\(writes)", "0"])
        guard let latencies = Burst(result), latencies.errors.isEmpty, !latencies.microseconds.isEmpty else {
            report.add(check, target: "measured", measured: "failed: \(result.how)", pass: false, note: result.stderr)
            return nil
        }
        let median = latencies.percentile(50)
        report.tracked(
            check, measured: "median \(formatMilliseconds(median)), p99 \(formatMilliseconds(latencies.percentile(99)))")
        return median
    }

    /// Sets every key to -1 in one write.
    static func prefill(_ app: String, keys: [String]) throws {
        let dictionary = try SecureDictionary(name: "fair", applicationID: app, options: .init(store: SecretServiceStore()))
        try dictionary.update { entries in for key in keys { entries[key] = -1 } }
    }

    /// Many processes writing back to back on one dictionary at the default deadline.
    ///
    /// The bound is 25 × a single write: each writer waits for the 15 queued ahead of it, and
    /// a turn is the keyring's read and write, so 15 turns is the floor. It was 20 × while a
    /// write gave the lock on as its CreateItem was sent (on gnome-keyring), which let turns
    /// overlap; that mechanism brought two lost-update bugs and was removed.
    static let fairnessBound = 25.0

    static func manyBackToBackWriters(_ harness: Harness, _ report: Report, single: Double) {
        let (processes, writes) = (harness.sizes.fairProcesses, harness.sizes.fairWrites)
        let app = harness.appID("fair")
        let check =
            "\(processes) processes × \(writes) back-to-back writes on a \(processes * writes)-entry dictionary, default 3 s deadline"
        let target =
            "0 timedOut, 0 lost, p99 wait ≤ \(Int(fairnessBound)) × median single write "
            + "(\(formatMilliseconds(fairnessBound * single))), "
            + "as the wait for the lock and as the whole call less a single write"
        let writers: [LiveChild]
        do {
            try prefill(app, keys: (0..<processes).flatMap { process in (0..<writes).map { "p\(process)-\($0)" } })
            writers = try (0..<processes).map { try harness.liveWorker(["burst", app, "fair", "p\($0)", "\(writes)", "0"]) }
        } catch {
            report.cannotRun(check, target: target, reason: "cannot fill the dictionary or start a writer: \(error)")
            return
        }
        var all = Burst()
        for writer in writers { all.merge(Burst(writer.finish(timeout: .seconds(900))) ?? Burst(failed: "a writer failed")) }
        // Every write set its own key from -1 to its index: anything else is a lost write.
        var lost = 0
        if let fresh = try? SecureDictionary(name: "fair", applicationID: app, options: .init(store: SecretServiceStore())) {
            for process in 0..<processes {
                for index in 0..<writes where fresh["p\(process)-\(index)"] != .integer(index) { lost += 1 }
            }
        } else {
            lost = -1
        }
        // The wait is what fairness bounds; the whole call less what a write alone costs is
        // held to the same bound, so that no part of the wait can hide in the next check.
        let waitP99 = all.waitPercentile(99)
        let callP99 = all.percentile(99)
        let beyondSingleP99 = callP99 - single
        let ratio = { (milliseconds: Double) in String(format: "%.1f", milliseconds / single) + "×" }
        report.add(
            check, target: target,
            measured: "\(all.timedOut) timedOut, \(all.errors.count) errors, \(lost) lost; wait median "
                + "\(formatMilliseconds(all.waitPercentile(50))), p99 \(formatMilliseconds(waitP99)) (\(ratio(waitP99))); "
                + "whole call median \(formatMilliseconds(all.percentile(50))), p99 \(formatMilliseconds(callP99)) "
                + "(\(ratio(callP99)); less a single write \(ratio(beyondSingleP99))), "
                + "max \(formatMilliseconds(all.percentile(100)))",
            pass: all.errors.isEmpty && lost == 0 && all.waits.count == all.microseconds.count
                && waitP99 <= fairnessBound * single
                && beyondSingleP99 <= fairnessBound * single,
            note: all.errors.first)
    }

    /// A writer that writes every 100 ms next to three that write back to back.
    static func occasionalWriterBesideBusyOnes(_ harness: Harness, _ report: Report, single: Double) {
        let app = harness.appID("occasional")
        let check = "a writer every 100 ms beside 3 back-to-back writers"
        let target = "its slowest write ≤ 20 × median single write (\(formatMilliseconds(20 * single))), 0 errors"
        do {
            let busy = try (0..<3).map {
                try harness.liveWorker(["burst", app, "fair", "busy\($0)", "\(harness.sizes.fairWrites * 2)", "0"])
            }
            let occasional = try harness.liveWorker(["burst", app, "fair", "slow", "\(harness.sizes.fairWrites / 2)", "100"])
            let slow = Burst(occasional.finish(timeout: .seconds(600))) ?? Burst(failed: "the occasional writer failed")
            var others = Burst()
            for writer in busy {
                others.merge(Burst(writer.finish(timeout: .seconds(600))) ?? Burst(failed: "a busy writer failed"))
            }
            let slowest = slow.percentile(100)
            report.add(
                check, target: target,
                measured: "slowest \(formatMilliseconds(slowest)) (\(String(format: "%.1f", slowest / single))×), median "
                    + "\(formatMilliseconds(slow.percentile(50))); \(slow.errors.count + others.errors.count) errors",
                pass: slow.errors.isEmpty && others.errors.isEmpty && slowest <= 20 * single,
                note: (slow.errors + others.errors).first)
        } catch {
            report.cannotRun(check, target: target, reason: "cannot start a writer: \(error)")
        }
    }

    /// Eight threads against a frozen daemon at a 1 s deadline; a cached read meanwhile.
    static func threadsAgainstAFrozenDaemon(_ harness: Harness, _ report: Report) {
        let check = "8 threads write against a frozen daemon, 1 s deadline"
        let target = "all timedOut by 1.5 s; a cached read meanwhile ≤ 1 ms"
        do {
            let dictionary = try SecureDictionary(
                name: "frozen", applicationID: harness.appID("frozen"),
                options: .init(timeout: .seconds(1), store: SecretServiceStore()))
            try dictionary.setValue("before", forKey: "k")
            guard harness.daemon("freeze").succeeded else {
                report.cannotRun(check, target: target, reason: "keyring-daemon freeze failed")
                return
            }
            defer { harness.daemon("thaw") }
            let results = Mutex<[(Double, String)]>([])
            let done = DispatchGroup()
            let start = ContinuousClock.now
            for index in 0..<8 {
                done.enter()
                Thread {
                    var outcome = "ok"
                    do { try dictionary.setValue(.integer(index), forKey: "t\(index)") } catch { outcome = caseName(error) }
                    results.withLock { $0.append((elapsedMilliseconds(since: start), outcome)) }
                    done.leave()
                }.start()
            }
            usleep(200_000)  // the writes are stuck on the daemon now
            let readStart = ContinuousClock.now
            let cached = dictionary["k"]
            let readMilliseconds = elapsedMilliseconds(since: readStart)
            done.wait()
            let outcomes = results.withLock { $0 }
            let slowest = outcomes.map(\.0).max() ?? 0
            let timedOut = outcomes.filter { $0.1 == "timedOut" }.count
            report.add(
                check, target: target,
                measured: "\(timedOut) of 8 timedOut, the last at \(String(format: "%.2f", slowest / 1_000)) s; cached read "
                    + "\(String(format: "%.3f", readMilliseconds)) ms",
                pass: timedOut == 8 && slowest <= 1_500 && readMilliseconds <= 1 && cached == "before")
        } catch {
            report.add(check, target: target, measured: "error \(caseName(error))", pass: false)
        }
    }

    /// A process stopped (SIGSTOP) while it holds the writer lock is named by the next writer.
    static func stoppedLockHolder(_ harness: Harness, _ report: Report) {
        let check = "a process stopped while it holds the writer lock"
        let target = "lockHeld naming its pid and command by 1.5 s (1 s deadline); writes go on once it is gone"
        let app = harness.appID("held")
        do {
            let holder = try harness.liveWorker(["hold", app, "held"])
            guard holder.nextLine(timeout: .seconds(30)) == "holding" else {
                report.add(check, target: target, measured: "the holder never took the lock", pass: false)
                return
            }
            holder.kill(SIGSTOP)
            let dictionary = try SecureDictionary(
                name: "held", applicationID: app,
                options: .init(timeout: .seconds(1), store: SecretServiceStore()))
            let start = ContinuousClock.now
            var measured = "wrote although the lock was held"
            var named = false
            do {
                try dictionary.setValue("blocked", forKey: "k")
            } catch SecureDictionaryError.lockHeld(let pid, let command) {
                named = pid == Int(holder.pid) && command == "sd-reliability"
                measured =
                    "lockHeld(pid: \(pid.map(String.init) ?? "nil") \(pid == Int(holder.pid) ? "(the holder)" : "(another)"), "
                    + "command: \(command ?? "nil")) after \(formatMilliseconds(elapsedMilliseconds(since: start)))"
            } catch {
                measured = "\(caseName(error)) after \(formatMilliseconds(elapsedMilliseconds(since: start)))"
            }
            let seconds = elapsedMilliseconds(since: start) / 1_000
            holder.kill(SIGKILL)
            _ = holder.finish(timeout: .seconds(10))
            var after = "ok"
            do { try dictionary.setValue("after", forKey: "k") } catch { after = caseName(error) }
            report.add(
                check, target: target, measured: measured + "; next write after its death: \(after)",
                pass: named && seconds <= 1.5 && after == "ok")
        } catch {
            report.add(check, target: target, measured: "error \(caseName(error))", pass: false)
        }
    }
}

/// The latencies and errors a `burst` worker reported.
struct Burst {
    /// Each call's whole duration.
    var microseconds: [Int] = []
    /// Each call's wait for other writers (threads and processes) before its own turn.
    var waits: [Int] = []
    var errors: [String] = []
    var timedOut: Int { errors.filter { $0.hasPrefix("timedOut") }.count }

    init() {}
    init(failed: String) { errors = [failed] }

    init?(_ result: ProcessResult) {
        guard let reply = WorkerReply.parse(result) else { return nil }
        let parts = (reply.detail ?? "").split(separator: ";", omittingEmptySubsequences: false)
        microseconds = (parts.first ?? "").split(separator: ",").compactMap { Int($0) }
        waits = parts.count > 1 ? parts[1].split(separator: ",").compactMap { Int($0) } : []
        errors = reply.error.map { $0.split(separator: ",").map(String.init) } ?? []
    }

    mutating func merge(_ other: Burst) {
        microseconds += other.microseconds
        waits += other.waits
        errors += other.errors
    }

    /// Nearest-rank percentile of the calls' durations, in milliseconds.
    func percentile(_ percent: Int) -> Double { Self.percentile(percent, of: microseconds) }

    /// Nearest-rank percentile of the waits, in milliseconds.
    func waitPercentile(_ percent: Int) -> Double { Self.percentile(percent, of: waits) }

    private static func percentile(_ percent: Int, of microseconds: [Int]) -> Double {
        let sorted = microseconds.sorted()
        guard !sorted.isEmpty else { return .infinity }
        let rank = max(0, min(sorted.count - 1, (sorted.count * percent + 99) / 100 - 1))
        return Double(sorted[rank]) / 1_000
    }
}

extension Worker {
    /// `burst APP NAME PREFIX COUNT PAUSE_MS`: COUNT `setValue` calls on keys PREFIX-0…, at the
    /// default deadline, PAUSE_MS apart. Prints each call's latency and its wait for the
    /// writer locks (the library's `lock-wait-us` trace) in µs, and the errors.
    static func burst(_ arguments: [String]) {
        guard arguments.count == 5, let count = Int(arguments[3]), let pause = UInt32(arguments[4]) else { usage() }
        var latencies: [String] = []
        var waits: [String] = []
        var errors: [String] = []
        do {
            let collector = TraceCollector(key: "lock-wait-us")
            let logger = Logger(label: "burst") { _ in TraceCollector.Handler(collector: collector) }
            let dictionary = try SecureDictionary(name: arguments[1], applicationID: arguments[0], options: .init(logger: logger))
            for index in 0..<count {
                let start = ContinuousClock.now
                do {
                    try dictionary.setValue(.integer(index), forKey: "\(arguments[2])-\(index)")
                    latencies.append(String(Int(elapsedMilliseconds(since: start) * 1_000)))
                    waits.append(collector.microseconds.last.map(String.init) ?? "-1")
                } catch {
                    errors.append(caseName(error))
                }
                if pause > 0 { usleep(pause * 1_000) }
            }
        } catch {
            errors.append("open \(caseName(error))")
        }
        WorkerReply(
            outcome: errors.isEmpty ? "ok" : "error", error: errors.isEmpty ? nil : errors.joined(separator: ","),
            count: latencies.count, detail: latencies.joined(separator: ",") + ";" + waits.joined(separator: ",")
        ).print()
    }

    /// `hold APP NAME`: takes the item's writer lock inside `update { }`, prints "holding", and
    /// keeps it until killed.
    static func hold(_ arguments: [String]) {
        guard arguments.count == 2 else { usage() }
        do {
            let dictionary = try SecureDictionary(
                name: arguments[1], applicationID: arguments[0], options: .init(timeout: .seconds(30)))
            try dictionary.update { _ in
                print("holding")
                fflush(nil)
                sleep(600)
            }
        } catch {
            WorkerReply(outcome: "error", error: caseName(error)).print()
        }
    }
}
