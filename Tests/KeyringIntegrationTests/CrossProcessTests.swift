import Foundation
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// Invariant 5: no lost updates across processes.
    @Suite struct CrossProcess {
        @Test func anotherProcessesWriteIsKeptByOurNextWrite() throws {
            let test = TestItem("interleaved")
            let dictionary = try test.open()  // A loads
            let other = try KeyringHarness.run(KeyringHarness.writer, ["set", test.appID, test.name, "x", "from-other"])
            #expect(other.status == 0, "\(other.stderr)")
            try dictionary.setValue("from-us", forKey: "y")  // A writes without reloading first
            let fresh = try test.openFresh()
            #expect(fresh["x"] == "from-other")
            #expect(fresh["y"] == "from-us")
            #expect(dictionary["x"] == "from-other")  // the write re-read what the other wrote
        }

        @Test func concurrentProcessesLoseNothing() throws {
            let test = TestItem("concurrent")
            let (processes, count, increments) = (4, 30, 10)
            let writers = try (0..<processes).map { index in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: KeyringHarness.writer)
                process.arguments = ["write", test.appID, test.name, "p\(index)", "\(count)", "\(increments)"]
                let out = Pipe()
                process.standardOutput = out
                try process.run()
                return (process, out)
            }
            var incrementsDone = 0
            for (process, out) in writers {
                let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                #expect(process.terminationStatus == 0)
                incrementsDone += Int(text.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 0
            }
            var expected: Set<String> = ["counter"]
            for process in 0..<processes {
                for index in 0..<count where index % 10 != 9 { expected.insert("p\(process)-\(index)") }
            }
            let fresh = try test.openFresh()
            #expect(
                Set(fresh.keys) == expected,
                "lost: \(expected.subtracting(fresh.keys).count), phantom: \(Set(fresh.keys).subtracting(expected).count)")
            #expect(fresh["counter"] == .integer(incrementsDone))
            #expect(incrementsDone == processes * increments)
        }
    }
}

extension KeyringIntegration.CrossProcess {
    /// issue 5: another process's write arrives through changes() without polling.
    @Test func anotherProcessesWriteArrivesAsAChange() async throws {
        let test = TestItem("observed")
        let dictionary = try test.open()
        var delays: [Duration] = []
        for round in 0..<5 {
            let value = "v\(round)"
            // Listen first, and take the time the moment the change arrives.
            let listener = Task { () -> (SecureDictionary.Change?, Double) in
                for await change in dictionary.changes() { return (change, Date().timeIntervalSince1970) }
                return (nil, 0)
            }
            try await Task.sleep(for: .milliseconds(100))
            let other = try KeyringHarness.run(KeyringHarness.writer, ["set", test.appID, test.name, "x", value])
            #expect(other.status == 0, "\(other.stderr)")
            // The writer printed the wall-clock time right after its write returned.
            let written = Double(other.trimmedText.split(separator: " ").last ?? "") ?? 0
            let (change, arrived) = await listener.value
            #expect(change?.key == "x")
            #expect(change?.newValue == .string(value))
            delays.append(.microseconds(Int((arrived - written) * 1_000_000)))
        }
        let median = delays.sorted()[delays.count / 2]
        print("cross-process change delay: median \(median), all \(delays)")
        #expect(median < .seconds(1))  // a sanity bound; the figure itself is reported above
    }
}
