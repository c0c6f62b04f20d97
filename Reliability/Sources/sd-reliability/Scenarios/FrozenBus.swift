import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Scenario 14: the session bus itself frozen (its dbus-daemon stopped with
/// SIGSTOP) for longer than the deadline, under writers that write back to back with a 1 s
/// deadline: the longest call against its deadline. Before the fix the next call after a
/// timed-out one waited for the bus to thaw (9,004 ms of a 10 s stop; 2,045 ms with two
/// contending writers).
enum FrozenBus {
    static let deadline = 1_000.0
    /// What a call may take beyond its deadline: the library's own work around the call.
    static let margin = 250.0

    static func run(_ harness: Harness, _ report: Report) {
        let target = "every call ≤ \(formatMilliseconds(deadline + margin)); writes again once thawed"
        guard harness.hasKeyring(report, check: "frozen bus", target: target) else { return }
        guard let control = harness.control,
            let text = try? String(contentsOfFile: "\(control)/dbus-daemon.pid", encoding: .utf8),
            let bus = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            report.cannotRun("frozen bus", target: target, reason: "no dbus-daemon.pid in the private session")
            return
        }
        let seconds = harness.sizes.frozenBusSeconds
        for (processes, threads) in [(1, 1), (1, 8), (2, 1)] {
            let check =
                "\(processes == 1 ? "1 process" : "\(processes) contending processes") × \(threads) "
                + "\(threads == 1 ? "thread" : "threads") writing back to back, bus frozen \(seconds) s, 1 s deadline"
            frozen(
                harness, report, bus: bus, processes: processes, threads: threads, seconds: seconds, check: check, target: target)
        }
    }

    static func frozen(
        _ harness: Harness, _ report: Report, bus: pid_t, processes: Int, threads: Int, seconds: Int, check: String,
        target: String
    ) {
        let app = harness.appID("frozenbus")
        let running = seconds + 4
        let workers: [LiveChild]
        do {
            workers = try (0..<processes).map { _ in
                try harness.liveWorker(["bus-writes", app, "d", "\(threads)", "\(Int(deadline))", "\(running)"])
            }
        } catch {
            report.cannotRun(check, target: target, reason: "cannot start a writer: \(error)")
            return
        }
        let ready = workers.allSatisfy { $0.nextLine(timeout: .seconds(60)) == "ready" }
        Thread.sleep(forTimeInterval: 1)
        let frozenAt = Date().timeIntervalSince1970
        kill(bus, SIGSTOP)
        Thread.sleep(forTimeInterval: Double(seconds))
        kill(bus, SIGCONT)
        let thawedAt = Date().timeIntervalSince1970
        let calls = workers.flatMap { worker in Calls(worker.finish(timeout: .seconds(running + 60))).list }
        guard ready, !calls.isEmpty else {
            report.add(check, target: target, measured: "writers failed", pass: false)
            return
        }
        let longest = calls.map(\.milliseconds).max() ?? .infinity
        let whileFrozen = calls.filter { $0.endedAt > frozenAt && $0.endedAt < thawedAt }.count
        let afterThaw = calls.filter { $0.endedAt > thawedAt && $0.outcome == "ok" }.count
        let unfinished = calls.filter { $0.outcome == "unfinished" }.count
        let outcomes = Set(calls.map(\.outcome)).subtracting(["ok", "timedOut", "lockHeld"])
        report.add(
            check, target: target,
            measured: "longest \(formatMilliseconds(longest)); \(whileFrozen) calls ended while frozen, "
                + "\(afterThaw) writes after the thaw"
                + (unfinished > 0 ? ", \(unfinished) still running at the end" : "")
                + (outcomes.isEmpty ? "" : "; other outcomes \(outcomes.sorted())"),
            pass: longest <= deadline + margin && whileFrozen >= processes * threads * (seconds - 1) && afterThaw > 0
                && outcomes.isEmpty)
    }

    /// The calls a `bus-writes` worker reported: "outcome:milliseconds:ended-at" each.
    struct Calls {
        struct Call {
            var outcome: String
            var milliseconds: Double
            var endedAt: Double
        }

        var list: [Call] = []

        init(_ result: ProcessResult) {
            guard let reply = WorkerReply.parse(result), let detail = reply.detail else { return }
            list = detail.split(separator: ",").compactMap { field in
                let parts = field.split(separator: ":")
                guard parts.count == 3, let milliseconds = Double(parts[1]), let endedAt = Double(parts[2]) else { return nil }
                return Call(outcome: String(parts[0]), milliseconds: milliseconds, endedAt: endedAt)
            }
        }
    }
}

extension Worker {
    /// `bus-writes APP NAME THREADS TIMEOUT_MS SECONDS`: opens the dictionary, prints "ready",
    /// then on THREADS threads sets one key each back to back for SECONDS; reports every call
    /// as outcome:milliseconds:ended-at (Unix time), a call still running then as "unfinished".
    static func busWrites(_ arguments: [String]) {
        guard arguments.count == 5, let threads = Int(arguments[2]), let timeout = Int(arguments[3]),
            let seconds = Int(arguments[4])
        else { usage() }
        let dictionary: SecureDictionary
        do {
            dictionary = try SecureDictionary(
                name: arguments[1], applicationID: arguments[0], options: .init(timeout: .milliseconds(timeout)))
        } catch {
            WorkerReply(outcome: "error", error: "open \(caseName(error))").print()
            return
        }
        print("ready")
        fflush(nil)
        let end = ContinuousClock.now + .seconds(seconds)
        let calls = Mutex<[String]>([])
        let running = Mutex<[Int: ContinuousClock.Instant]>([:])
        let group = DispatchGroup()
        for thread in 0..<threads {
            group.enter()
            Thread {
                var count = 0
                while ContinuousClock.now < end {
                    let start = ContinuousClock.now
                    running.withLock { $0[thread] = start }
                    var outcome = "ok"
                    do { try dictionary.setValue(.integer(count), forKey: "t\(thread)") } catch { outcome = caseName(error) }
                    running.withLock { $0[thread] = nil }
                    let call = "\(outcome):\(elapsedMilliseconds(since: start)):\(Date().timeIntervalSince1970)"
                    calls.withLock { $0.append(call) }
                    count += 1
                }
                group.leave()
            }.start()
        }
        _ = group.wait(timeout: .now() + .seconds(seconds + 30))
        let stuck = running.withLock { $0.values.map { "unfinished:\(elapsedMilliseconds(since: $0)):0" } }
        WorkerReply(outcome: "ok", detail: (calls.withLock { $0 } + stuck).joined(separator: ",")).print()
        exit(0)  // a stuck thread would keep the process alive
    }
}
