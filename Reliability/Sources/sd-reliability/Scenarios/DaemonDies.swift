import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Scenario 3: gnome-keyring is killed (-9) in the middle of a write, or frozen (SIGSTOP).
enum DaemonDies {
    /// Size of the value each trial writes: large enough that the write takes a few ms.
    static let valueSize = 256 * 1024

    static func run(_ harness: Harness, _ report: Report) {
        if let reason = harness.keyringMissing {
            report.cannotRun("kill -9 during a write", target: "0 torn/empty/undecodable", reason: reason)
            report.cannotRun("frozen daemon", target: "timedOut at deadline ± 0.5 s", reason: reason)
            return
        }
        killTrials(harness, report)
        frozen(harness, report)
    }

    static func daemonPid(_ harness: Harness) -> pid_t? {
        guard let control = harness.control,
            let text = try? String(contentsOfFile: "\(control)/gnome-keyring.pid", encoding: .utf8)
        else { return nil }
        return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func killTrials(_ harness: Harness, _ report: Report) {
        let trials = harness.sizes.killTrials
        let check = "\(trials) × kill -9 the daemon at a random moment of a write, restart, reopen"
        let target = "0 torn/empty/undecodable, value old or new, 0 crashes/hangs"
        let app = harness.appID("kill")
        let name = "kill"
        var generator = SplitMix64(seed: 0xDEAD_BEEF)
        let fixture: FixtureServer
        let item: KeyringItem
        do {
            fixture = try harness.fixture()
            item = try KeyringItem(dictionaryName: name, applicationID: app)
            let setup = try SecureDictionary(name: name, applicationID: app, options: .init(store: SecretServiceStore()))
            try setup.update { $0 = ["v": .data(Data(randomBytes(valueSize, using: &generator))), "gen": 0, "other": "kept"] }
        } catch {
            report.cannotRun(check, target: target, reason: "setup: \(error)")
            return
        }
        var bad: [String] = []
        var cacheMismatches: [String] = []
        var outcomes: [String: Int] = [:]
        var stored = (old: 0, new: 0)
        var acknowledgedButOld = 0
        var killedDuringCall = 0
        for trial in 1...trials {
            func fail(_ text: String) { bad.append("trial \(trial): \(text)") }
            // What the item holds now is "old"; "new" is what the worker's update makes of it.
            let oldBlob: [UInt8]
            do { oldBlob = try fixture.read(item.attributes) } catch {
                fail("cannot read the item before the trial: \(error)")
                _ = harness.daemon("restart")
                fixture.reset()
                continue
            }
            guard var entries = try? BinaryPropertyListCoding.decode(Data(oldBlob)) else {
                fail("the item does not decode before the trial")
                break
            }
            let seed = generator.next()
            var valueGenerator = SplitMix64(seed: seed)
            entries["v"] = .data(Data(randomBytes(valueSize, using: &valueGenerator)))
            entries["gen"] = .integer(trial)
            guard let newBlob = try? [UInt8](BinaryPropertyListCoding.encode(entries)) else {
                fail("cannot encode")
                break
            }

            guard let pid = daemonPid(harness) else {
                fail("no daemon pid")
                break
            }
            let worker: LiveChild
            do { worker = try harness.liveWorker(["kill-mutate", app, name, "\(seed)", "\(trial)"]) } catch {
                fail("cannot start the worker: \(error)")
                break
            }
            guard worker.nextLine(timeout: .seconds(20)) == "ready" else {
                let result = worker.finish(timeout: .seconds(5))
                fail("the worker did not load: \(result.how) \(result.lastLine) \(result.stderr.suffix(200))")
                continue
            }
            // A random moment: from at once to a little after a typical write has finished.
            usleep(UInt32.random(in: 0...25_000, using: &generator))
            kill(pid, SIGKILL)
            let restart = harness.daemon("restart")
            fixture.reset()
            try? worker.send("check")
            let result = worker.finish(timeout: .seconds(30))
            if !restart.succeeded { fail("the daemon did not restart: \(restart.stderr)") }
            let lines = result.text.split(separator: "\n").map(String.init)
            let reply = lines.count >= 2 ? try? JSONDecoder().decode(WorkerReply.self, from: Data(lines[1].utf8)) : nil
            let afterwards = lines.count >= 3 ? try? JSONDecoder().decode(WorkerReply.self, from: Data(lines[2].utf8)) : nil
            if result.signaled || result.timedOut || reply == nil || afterwards == nil {
                fail("worker \(result.how) \(result.text.suffix(200)) \(result.stderr.suffix(200))")
            }
            let outcome = reply.map { $0.outcome == "ok" ? "ok" : ($0.error ?? "?") } ?? result.how
            outcomes[outcome, default: 0] += 1
            if let reply, reply.outcome != "ok" {
                killedDuringCall += 1
                if reply.error == "other" || reply.error?.hasPrefix("untyped") == true {
                    fail("untyped error \(reply.detail ?? "")")
                }
            }

            // The item: exactly one, holding the old or the new blob byte for byte.
            do {
                let count = try fixture.count(item.attributes)
                if count != 1 { fail("\(count) items after the restart") }
                let now = try fixture.read(item.attributes)
                let storedGeneration = (try? BinaryPropertyListCoding.decode(Data(now)))?["gen"]?.integerValue
                if now == oldBlob {
                    stored.old += 1
                    if reply?.outcome == "ok" { acknowledgedButOld += 1 }
                }
                if let afterwards, afterwards.count != storedGeneration, !(now == oldBlob && reply?.outcome == "ok") {
                    let seen = afterwards.outcome == "ok" ? "generation \(afterwards.count ?? -1)" : (afterwards.error ?? "?")
                    cacheMismatches.append(
                        "trial \(trial): after \(reply?.error ?? "success") the writer's instance reads \(seen), "
                            + "the store holds generation \(storedGeneration ?? -1)")
                }
                if now == oldBlob {
                } else if now == newBlob {
                    stored.new += 1
                } else if now.isEmpty {
                    fail("the item is empty")
                } else if (try? BinaryPropertyListCoding.decode(Data(now))) == nil {
                    fail("the item is undecodable (\(now.count) bytes)")
                } else {
                    fail("the item holds neither the old nor the new blob (torn)")
                }
                // Reopen through the library, as a new process would.
                let reopened = try SecureDictionary(name: name, applicationID: app, options: .init(store: SecretServiceStore()))
                let seen = reopened.snapshot
                if seen != (try BinaryPropertyListCoding.decode(Data(now))) { fail("a reopen does not see what is stored") }
            } catch {
                fail("after the restart: \(error)")
            }
            if bad.count > 20 { break }
        }
        let outcomeText = outcomes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        report.add(
            check, target: target,
            measured: "\(bad.count) bad; stored old \(stored.old) / new \(stored.new); writer: \(outcomeText)",
            pass: bad.isEmpty && stored.old + stored.new == trials, note: bad.first)
        report.add(
            "the writer's instance after the restart (invariant 3)", target: "reads what the store holds",
            measured: "\(cacheMismatches.count) of \(trials) trials read something else",
            pass: cacheMismatches.isEmpty, note: cacheMismatches.first)
        report.tracked(
            "acknowledged writes found old after the kill (gnome-keyring's durability)",
            measured: "\(acknowledgedButOld) of \(outcomes["ok"] ?? 0) acknowledged; \(killedDuringCall) writes hit by the kill")
    }

    static func frozen(_ harness: Harness, _ report: Report) {
        let app = harness.appID("frozen")
        let deadline = Duration.seconds(1)
        let target = "timedOut at 1 s ± 0.5 s"
        do {
            let fixture = try harness.fixture()
            let item = try KeyringItem(dictionaryName: "frozen", applicationID: app)
            let options = SecureDictionary.Options(timeout: deadline, store: SecretServiceStore())
            let a = try SecureDictionary(name: "frozen", applicationID: app, options: options)
            try a.setValue("before", forKey: "k")
            guard harness.daemon("freeze").succeeded else {
                report.cannotRun("frozen daemon", target: target, reason: "keyring-daemon freeze failed")
                return
            }
            var thawed = false
            defer { if !thawed { harness.daemon("thaw") } }

            func timed(_ what: String, _ body: () throws -> Void) {
                let start = ContinuousClock.now
                var outcome = "no error"
                do { try body() } catch { outcome = caseName(error) }
                let seconds = (ContinuousClock.now - start) / .seconds(1)
                let pass = outcome == "timedOut" && abs(seconds - (deadline / .seconds(1))) <= 0.5
                report.add(
                    "frozen daemon: \(what)", target: target,
                    measured: String(format: "%@ after %.2f s", outcome, seconds), pass: pass)
            }
            timed("open") {
                _ = try SecureDictionary(
                    name: "frozen", applicationID: app,
                    options: .init(timeout: deadline, store: SecretServiceStore()))
            }
            timed("write") { try a.setValue("during-freeze", forKey: "k") }
            timed("open of another item") { _ = try SecureDictionary(name: "other", applicationID: app, options: options) }

            harness.daemon("thaw")
            thawed = true
            usleep(300_000)  // the daemon answers what was queued while it was stopped
            fixture.reset()
            let raw = try BinaryPropertyListCoding.decode(Data(try fixture.read(item.attributes)))
            let later = try a.value(forKey: "k")
            let fresh = try SecureDictionary(name: "frozen", applicationID: app, options: .init(store: SecretServiceStore()))["k"]
            let holds = raw["k"]?.stringValue ?? "?"
            report.add(
                "after thaw, a later read shows what the daemon holds",
                target: "read == stored (the write's outcome was unknown)",
                measured: "daemon holds \"\(holds)\"; the timed-out instance reads \"\(later?.stringValue ?? "nil")\", "
                    + "a new one \"\(fresh?.stringValue ?? "nil")\"",
                pass: later == raw["k"] && fresh == raw["k"])
        } catch {
            report.add("frozen daemon", target: target, measured: "error: \(error)", pass: false)
        }
    }
}

extension Worker {
    /// `kill-mutate APP NAME SEED TRIAL`: loads, says "ready", then writes a new random value
    /// (from SEED) and the trial number in one update, while the runner kills the daemon.
    static func killMutate(_ arguments: [String]) {
        guard arguments.count == 4, let seed = UInt64(arguments[2]), let trial = Int(arguments[3]) else { usage() }
        do {
            let dictionary = try SecureDictionary(
                name: arguments[1], applicationID: arguments[0],
                options: .init(timeout: .seconds(3)))
            var generator = SplitMix64(seed: seed)
            let value = Data(randomBytes(DaemonDies.valueSize, using: &generator))
            print("ready")
            fflush(nil)
            let start = ContinuousClock.now
            do {
                try dictionary.update { entries in
                    entries["v"] = .data(value)
                    entries["gen"] = .integer(trial)
                }
                WorkerReply(outcome: "ok", milliseconds: elapsedMilliseconds(since: start)).print()
            } catch {
                WorkerReply(
                    outcome: "error", error: caseName(error), milliseconds: elapsedMilliseconds(since: start),
                    detail: "\(error)"
                ).print()
            }
            // Once the daemon is back: what does this instance read now? Its cache must follow
            // the store (or, after an unknown outcome, reload).
            _ = readLine()
            do {
                let generation = try dictionary.value(forKey: "gen")?.integerValue ?? -1
                WorkerReply(outcome: "ok", count: generation).print()
            } catch {
                WorkerReply(outcome: "error", error: caseName(error)).print()
            }
        } catch {
            print("load failed: \(caseName(error))")
            exit(1)
        }
    }
}
