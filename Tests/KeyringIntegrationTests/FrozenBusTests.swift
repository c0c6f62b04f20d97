import Foundation
import SecureDictionaryTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension KeyringIntegration {
    /// The session bus itself frozen (its dbus-daemon stopped with SIGSTOP) for
    /// longer than the deadline. Every call of a writer that writes back to back ends by its
    /// deadline, the calls after the first timed-out one too: those once waited for the bus to
    /// thaw (9 of a 10 s stop), in GLib's handshake of a new connection to the bus, which
    /// waits without end. Then the writers write again, on the thawed bus.
    @Suite(.enabled(if: privateBusPID != nil, "needs the private bus of scripts/with-private-keyring"))
    struct FrozenBus {
        /// The deadline of each call, in milliseconds.
        static let deadline = 1_000
        /// How much longer than its deadline a call may take: what the library's own work
        /// around the call needs on a loaded machine. A call that waits for the thaw takes
        /// seconds more.
        static let margin = 500

        @Test(.timeLimit(.minutes(2))) func aWriterOnAFrozenBusEndsEveryCallByItsDeadline() throws {
            try expectEveryCallEndsByItsDeadline(processes: 1, threads: 1)
        }

        @Test(.timeLimit(.minutes(2))) func eightThreadsOnAFrozenBusEndEveryCallByItsDeadline() throws {
            try expectEveryCallEndsByItsDeadline(processes: 1, threads: 8)
        }

        @Test(.timeLimit(.minutes(2))) func twoContendingWritersOnAFrozenBusEndEveryCallByItsDeadline() throws {
            try expectEveryCallEndsByItsDeadline(processes: 2, threads: 1)
        }

        /// A process started while the bus is frozen: its first call ends by its deadline,
        /// `openWhenUnlocked` too, which listens for the keyring's signals before its first
        /// try (starting to listen once waited for the bus without end).
        @Test(.timeLimit(.minutes(2))) func aProcessStartedOnAFrozenBusEndsItsFirstCallsByTheirDeadline() throws {
            let bus = try #require(privateBusPID)
            let app = "it.\(UUID().uuidString)"
            kill(bus, SIGSTOP)
            var thawed = false
            defer { if !thawed { kill(bus, SIGCONT) } }
            let environment = ["SD_TEST_WRITER_TIMEOUT_MS": "\(Self.deadline)"]
            let set = try ChildProcess.run(
                KeyringHarness.writer, ["set", app, "frozen-start", "k", "v"], environment: Self.merged(environment),
                timeout: .seconds(20))
            let waiting = try ChildProcess.run(
                KeyringHarness.writer, ["open-when-unlocked", app, "frozen-start"], environment: Self.merged(environment),
                timeout: .seconds(20))
            kill(bus, SIGCONT)
            thawed = true
            #expect(set.status == 1 && set.elapsed < .milliseconds(Self.deadline + Self.margin + 1_000), "\(set)")
            let fields = waiting.trimmedText.split(separator: " ")
            #expect(fields.count == 3 && fields[1] == "timedOut", "\(waiting)")
            #expect((Int(fields.last ?? "") ?? .max) <= Self.deadline + Self.margin, "\(waiting)")
            #expect(try ChildProcess.run(KeyringHarness.writer, ["set", app, "frozen-start", "k", "v"]).succeeded)
        }

        static func merged(_ extra: [String: String]) -> [String: String] {
            ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        }

        /// One reported call of `sd-test-writer pound`: "call THREAD OUTCOME MILLISECONDS".
        struct Call {
            let thread: String
            let outcome: String
            let milliseconds: Int

            init?(_ line: String) {
                let fields = line.split(separator: " ")
                guard fields.count == 4, fields[0] == "call", let milliseconds = Int(fields[3]) else { return nil }
                (thread, outcome, self.milliseconds) = (String(fields[1]), String(fields[2]), milliseconds)
            }
        }

        /// Whether each of `threads` threads reported a call that `counts` after the first `skipping` lines.
        static func each(_ threads: Int, in lines: [String], after skipping: Int, _ counts: (Call) -> Bool, times: Int = 1)
            -> Bool
        {
            let calls = lines.dropFirst(skipping).compactMap(Call.init).filter(counts)
            return (0..<threads).allSatisfy { thread in calls.filter { $0.thread == "\(thread)" }.count >= times }
        }

        /// `processes` writers of one item, `threads` threads each, writing back to back with a
        /// 1 s deadline; the bus frozen until every thread ended three calls (at most 8 s), then thawed.
        private func expectEveryCallEndsByItsDeadline(processes: Int, threads: Int) throws {
            let bus = try #require(privateBusPID)
            let app = "it.\(UUID().uuidString)"
            let writers = try (0..<processes).map { _ in
                try LiveChild(
                    KeyringHarness.writer, ["pound", app, "frozen-bus", "\(threads)"],
                    environment: ["SD_TEST_WRITER_TIMEOUT_MS": "\(Self.deadline)"])
            }
            defer { for writer in writers { writer.finish() } }
            for writer in writers {
                let writing = writer.waitUntil(timeout: .seconds(60)) {
                    Self.each(threads, in: $0, after: 0) { $0.outcome == "ok" }
                }
                try #require(writing, "\(writer.lines.suffix(5))")
            }

            let frozenAt = writers.map(\.lines.count)
            kill(bus, SIGSTOP)
            var thawed = false
            defer { if !thawed { kill(bus, SIGCONT) } }
            let limit = ContinuousClock.now + .seconds(8)
            let failedWhileFrozen = zip(writers, frozenAt).allSatisfy { writer, start in
                writer.waitUntil(timeout: ContinuousClock.now.duration(to: limit)) {
                    Self.each(threads, in: $0, after: start, { $0.outcome != "ok" }, times: 3)
                }
            }
            kill(bus, SIGCONT)
            thawed = true
            let thawedAt = writers.map(\.lines.count)
            let writingAgain = zip(writers, thawedAt).allSatisfy { writer, start in
                writer.waitUntil(timeout: .seconds(30)) { Self.each(threads, in: $0, after: start) { $0.outcome == "ok" } }
            }

            let calls = writers.flatMap { $0.lines.compactMap(Call.init) }
            let slowest = try #require(calls.max { $0.milliseconds < $1.milliseconds })
            #expect(failedWhileFrozen, "not every thread ended three calls while the bus was frozen")
            #expect(
                slowest.milliseconds <= Self.deadline + Self.margin,
                "a call took \(slowest.milliseconds) ms (\(slowest.outcome)) with a \(Self.deadline) ms deadline")
            #expect(writingAgain, "not every thread wrote again once the bus thawed")
            let outcomes = Set(calls.map(\.outcome))
            #expect(outcomes.isSubset(of: ["ok", "timedOut", "lockHeld"]), "\(outcomes)")
        }
    }
}

/// The dbus-daemon of the private bus (scripts/with-private-keyring writes its pid).
var privateBusPID: pid_t? {
    guard let control = ProcessInfo.processInfo.environment["SD_TEST_KEYRING_CONTROL"],
        let text = try? String(contentsOfFile: "\(control)/dbus-daemon.pid", encoding: .utf8)
    else { return nil }
    return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
}
