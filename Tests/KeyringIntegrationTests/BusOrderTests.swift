import Foundation
import SecureDictionaryTestSupport
import Synchronization
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// On the bus itself, on every provider: a write gives the writer lock's name back only
    /// after its write was answered, so the next writer's check sees it. (On gnome-keyring it
    /// once gave the name back right after its CreateItem was sent.)
    @Suite struct LockRelease {
        @Test(.timeLimit(.minutes(1))) func theLockIsGivenBackOnlyAfterTheWriteIsAnswered() throws {
            let test = TestItem("release-order")
            let dictionary = try test.open(.init(store: SecretServiceStore()))
            try dictionary.setValue("first", forKey: "a")  // creates the item (read back)
            let busName = BusNameWriterLock.busName(for: try test.item)

            let monitor = try BusMonitor(rules: [
                "type='method_call',member='CreateItem'", "type='method_call',member='SetSecret'",
                "type='method_call',member='ReleaseName'", "type='method_return'", "type='error'",
            ])
            try dictionary.setValue("second", forKey: "b")
            try dictionary.setValue("third", forKey: "c")
            let messages = try monitor.stop()

            let releases = messages.enumerated().filter { $0.element.member == "ReleaseName" && $0.element.argument == busName }
            try #require(releases.count == 2, "\(messages.count) messages")
            for (index, release) in releases {
                // The write: the last CreateItem or SetSecret this process sent before the release.
                let write = try #require(
                    messages[..<index].last {
                        $0.sender == release.sender && ($0.member == "CreateItem" || $0.member == "SetSecret")
                    })
                let answer = try #require(
                    messages.firstIndex { $0.replySerial == write.serial && $0.destination == release.sender },
                    "no answer to \(write.member ?? "")")
                #expect(answer < index, "ReleaseName went out before the write's answer on \(PrivateKeyring.provider)")
            }
            let fresh = try test.openFresh()
            #expect(fresh["a"] == "first" && fresh["b"] == "second" && fresh["c"] == "third")
        }
    }
}

extension KeyringIntegration {
    /// The check before a write asks for the secret at the item's last path right behind the
    /// search, without waiting for the search's answer: one round trip, not two. Not on
    /// KeePassXC, where reading an item may ask its user.
    ///
    /// The daemon is frozen while the write starts, so the search cannot be answered: the
    /// GetSecrets shows up on the bus only if the client did not wait. (Watching the bus
    /// unfrozen is a race a fast daemon such as kwalletd sometimes wins.)
    @Suite struct CheckRoundTrips {
        @Test(.timeLimit(.minutes(1))) func theCheckAsksForTheSecretBeforeTheSearchIsAnswered() throws {
            let test = TestItem("round-trips")
            let dictionary = try test.open(.init(timeout: .seconds(10), store: SecretServiceStore()))
            try dictionary.setValue("first", forKey: "a")
            try dictionary.setValue("second", forKey: "b")  // its check finds the item's path

            let monitor = try BusMonitor(rules: [
                "type='method_call',member='SearchItems'", "type='method_call',member='GetSecrets'",
                "type='method_return'", "type='error'",
            ])
            try KeyringHarness.daemon("freeze")
            var thawed = false
            defer { if !thawed { try? KeyringHarness.daemon("thaw") } }
            let written = DispatchGroup()
            let failure = Mutex<SecureDictionaryError?>(nil)
            written.enter()
            Thread {
                do throws(SecureDictionaryError) { try dictionary.setValue("third", forKey: "c") } catch {
                    failure.withLock { $0 = error }
                }
                written.leave()
            }.start()
            let readWhileFrozen = monitor.waitUntil(timeout: .seconds(1)) { messages in
                guard let search = messages.firstIndex(where: { $0.member == "SearchItems" }) else { return false }
                return messages[search...].contains { $0.member == "GetSecrets" && $0.sender == messages[search].sender }
            }
            try KeyringHarness.daemon("thaw")
            thawed = true
            written.wait()
            let messages = try monitor.stop()
            #expect(failure.withLock { $0 } == nil)

            let search = try #require(messages.firstIndex { $0.member == "SearchItems" }, "\(messages.count) messages")
            let searcher = messages[search].sender
            let read = try #require(
                messages.firstIndex { $0.member == "GetSecrets" && $0.sender == searcher }, "no GetSecrets")
            let answer = try #require(
                messages.firstIndex { $0.replySerial == messages[search].serial && $0.destination == searcher },
                "no answer to SearchItems")
            if PrivateKeyring.provider == "keepassxc" {
                #expect(!readWhileFrozen && answer < read, "GetSecrets went out before the search was answered on KeePassXC")
            } else {
                #expect(
                    readWhileFrozen && read < answer, "GetSecrets waited for the search's answer on \(PrivateKeyring.provider)")
            }
            #expect(try test.openFresh().snapshot == ["a": "first", "b": "second", "c": "third"])
        }
    }
}

/// `dbus-monitor` on the session bus: the messages the bus routes, in the order it routes them.
private final class BusMonitor {
    struct Message {
        var kind: String
        var sender: String?
        var destination: String?
        var serial: Int?
        var replySerial: Int?
        var member: String?
        /// The first string argument.
        var argument: String?
    }

    private let monitor: LiveChild

    /// Starts monitoring with the given match rules; returns once the bus made it a monitor.
    init(rules: [String]) throws {
        monitor = try LiveChild("/usr/bin/dbus-monitor", ["--session"] + rules)
        // The bus takes its unique name away when it becomes a monitor.
        guard monitor.waitUntil(timeout: .seconds(30), { $0.contains { $0.contains("member=NameLost") } }) else {
            throw MonitorFailure(text: monitor.lines.joined(separator: "\n"))
        }
    }

    struct MonitorFailure: Error {
        let text: String
    }

    /// Reads what the monitor reports until `seen` holds for the messages so far (true) or
    /// `timeout` passes (false). dbus-monitor writes each message out as it sees it.
    func waitUntil(timeout: Duration, _ seen: ([Message]) -> Bool) -> Bool {
        monitor.waitUntil(timeout: timeout) { seen(Self.messages(in: $0)) }
    }

    /// Stops the monitor (after the bus has routed what is on its way) and parses what it saw.
    func stop() throws -> [Message] {
        usleep(200_000)
        // SIGKILL: the child inherits the test thread's blocked signals, SIGINT and SIGTERM
        // among them.
        monitor.kill(SIGKILL)
        monitor.finish()
        return Self.messages(in: monitor.lines)
    }

    /// The messages in dbus-monitor's lines so far.
    private static func messages(in lines: [String]) -> [Message] {
        var messages: [Message] = []
        for line in lines where !line.isEmpty {
            if let first = line.first, first != " " {
                messages.append(Self.header(String(line)))
            } else if var last = messages.popLast() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if last.argument == nil, trimmed.hasPrefix("string \""), trimmed.hasSuffix("\"") {
                    last.argument = String(trimmed.dropFirst(8).dropLast())
                }
                messages.append(last)
            }
        }
        return messages
    }

    /// `method call time=… sender=:1.9 -> destination=… serial=10 path=…; interface=…; member=CreateItem`
    private static func header(_ line: String) -> Message {
        let kind = line.components(separatedBy: " time=").first ?? ""
        var fields: [String: String] = [:]
        for word in line.split(separator: " ") {
            let parts = word.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]).trimmingCharacters(in: [";"]) }
        }
        return Message(
            kind: kind, sender: fields["sender"], destination: fields["destination"],
            serial: fields["serial"].flatMap { Int($0) },
            replySerial: fields["reply_serial"].flatMap { Int($0) }, member: fields["member"])
    }
}
