import Dispatch
import Foundation
import SecureDictionaryTestSupport
import Synchronization
import Testing

@testable import SecureDictionary

#if canImport(Glibc)
    import Glibc
#endif

/// A process that read one configuration value through `SecureDictionaryProvider` holds no
/// other entry of the dictionary in its memory: the provider reads one entry at a time out of
/// the library's wiped memory, as the subscript does, never a copy of every entry (a
/// `snapshot` per lookup left the other entries' keys and values in freed, unwiped memory).
///
/// Each run plants a dictionary holding canaries (random keys with random string values,
/// and, for a large one, 1,000 entries in all), then `sd-test-writer config-read` reads the
/// one key `config.read` (`value`, `fetchValue`, the first element of `watchValue`) and waits
/// while ``CoreScan`` searches what a core of it would hold. The value it read is the
/// positive control: the process holds it, so the scan must find it. Ten processes, five
/// small and five large dictionaries, since a copy left on a stack shows in some runs only;
/// they start and read together, and their cores are taken two at a time. Runs once, with
/// gnome-keyring.
@Suite(
    .serialized,
    .enabled(if: PrivateKeyring.enabled && PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct ConfigurationMemoryScan {
    let folder: String

    init() throws {
        folder = try TemporaryFolder.create("sd-config-scan")
    }

    @Test func readingOneConfigurationValueLeavesNoOtherEntryInACore() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let sizes = Array(repeating: 10, count: 5) + Array(repeating: 1_000, count: 5)
        let readers = try sizes.enumerated().map { run, size in
            let dictionary = CanaryDictionary(size: size)
            let test = TestItem("config-scan-\(run)")
            try test.open(.init(timeout: .seconds(20))).update { $0.dictionary = dictionary.entries }
            return (dictionary, try Reader(of: test, errors: "\(folder)/reader-\(run).err"))
        }
        // Two scans at a time: a scan waits on its reader's readiness as much as on the CPU.
        let scans = Mutex<[Int: Result<CoreScan, any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: 2) { lane in
            for (run, (dictionary, reader)) in readers.enumerated() where run % 2 == lane {
                let scan = Result { () throws -> CoreScan in
                    try reader.waitUntilReady()
                    return try CoreScan.take(of: reader.pid, secrets: dictionary.secrets)
                }
                reader.finish()
                scans.withLock { $0[run] = scan }
            }
        }
        var leaks: [String] = []
        for (run, size) in sizes.enumerated() {
            let scan = try #require(scans.withLock { $0[run] }).get()
            #expect(scan.found.contains("read"), "run \(run) (\(size) entries): the control was not found")
            let others = scan.found.subtracting(["read"])
            if !others.isEmpty { leaks.append("run \(run) (\(size) entries): \(others.count) other canaries") }
            #expect(others.isEmpty, "run \(run) (\(size) entries): other entries in the core: \(others.sorted())")
        }
        print(
            "configuration memory scan: \(sizes.count) processes, \(leaks.isEmpty ? "no other entry found" : leaks.joined(separator: "; "))"
        )
    }

    /// A dictionary whose entry `config.read` holds the control, beside canary entries (key
    /// and value random) and, up to `size` entries, fillers that hold no secret.
    struct CanaryDictionary {
        var entries: [String: PropertyListValue] = [:]
        var secrets: [String: [UInt8]] = [:]

        init(size: Int) {
            let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
            func text(_ length: Int) -> [UInt8] { (0..<length).map { _ in letters.randomElement()! } }
            let control = text(96)
            entries["config.read"] = .string(String(decoding: control, as: UTF8.self))
            secrets["read"] = control
            for canary in 0..<min(size - 1, 15) {
                let (key, value) = (text(48), text(96))
                entries[String(decoding: key, as: UTF8.self)] = .string(String(decoding: value, as: UTF8.self))
                secrets["key-\(canary)"] = key
                secrets["value-\(canary)"] = value
            }
            for filler in entries.count..<size { entries["filler-\(filler)"] = .integer(filler) }
        }
    }

    /// `sd-test-writer config-read` reading `config.read` of `test`'s item, started at once.
    final class Reader: Sendable {
        struct Failure: Error, CustomStringConvertible {
            let description: String
        }

        let pid: pid_t
        private let input: FileHandle
        private let output: FileHandle
        private let errors: String
        private let finished = Mutex(false)

        init(of test: TestItem, errors: String) throws {
            let (inputRead, inputWrite) = try Spawn.pipe()
            let (outputRead, outputWrite) = try Spawn.pipe()
            pid = try Spawn.start(
                KeyringHarness.writer, ["config-read", test.appID, test.name, "config.read"],
                environment: ProcessInfo.processInfo.environment, standardInput: .descriptor(inputRead),
                standardOutput: .descriptor(outputWrite), standardError: .file(errors))
            close(inputRead)
            close(outputWrite)
            (input, output, self.errors) = (
                FileHandle(fileDescriptor: inputWrite, closeOnDealloc: true),
                FileHandle(fileDescriptor: outputRead, closeOnDealloc: true), errors
            )
        }

        deinit { finish() }

        /// Waits for its "ready" line: it read the value three times and holds what it read.
        ///
        /// - Throws: when it printed something else, or nothing.
        func waitUntilReady() throws {
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let chunk = output.availableData
                if chunk.isEmpty { break }
                line += chunk
            }
            let ready = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let stderr = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            guard ready == "ready 3" else {
                throw Failure(description: "config-read: \(ready.debugDescription), \(stderr.suffix(500))")
            }
        }

        /// Ends its wait and reaps it.
        func finish() {
            guard
                !finished.withLock({ finished in
                    defer { finished = true }
                    return finished
                })
            else { return }
            try? input.close()
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }
}
