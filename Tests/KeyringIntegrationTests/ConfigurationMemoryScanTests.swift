import Foundation
import SecureDictionaryTestSupport
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
/// while gdb's `gcore` takes its core, which ``CoreScan`` searches. The value it read is the
/// positive control: the process holds it, so the scan must find it. Twelve processes, small
/// and large dictionaries, since a copy left on a stack shows in some runs only. Runs once,
/// with gnome-keyring.
@Suite(
    .serialized,
    .enabled(if: PrivateKeyring.enabled && PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct ConfigurationMemoryScan {
    let folder: String

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("sd-config-scan-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    @Test func readingOneConfigurationValueLeavesNoOtherEntryInACore() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var leaks: [String] = []
        for (run, size) in (Array(repeating: 10, count: 6) + Array(repeating: 1_000, count: 6)).enumerated() {
            let dictionary = CanaryDictionary(size: size)
            let test = TestItem("config-scan-\(run)")
            try test.open(.init(timeout: .seconds(20))).update { $0.dictionary = dictionary.entries }
            let scan = try scanReader(of: test, secrets: dictionary.secrets)
            #expect(scan.found.contains("read"), "run \(run) (\(size) entries): the control was not found")
            let others = scan.found.subtracting(["read"])
            if !others.isEmpty { leaks.append("run \(run) (\(size) entries): \(others.count) other canaries") }
            #expect(others.isEmpty, "run \(run) (\(size) entries): other entries in the core: \(others.sorted())")
        }
        print(
            "configuration memory scan: 12 processes, \(leaks.isEmpty ? "no other entry found" : leaks.joined(separator: "; "))")
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

    /// Runs `sd-test-writer config-read` on `test`'s item, waits until it read, and searches
    /// its core for `secrets`.
    func scanReader(of test: TestItem, secrets: [String: [UInt8]]) throws -> CoreScan {
        let errors = "\(folder)/reader-\(UUID().uuidString).err"
        let (inputRead, inputWrite) = try Spawn.pipe()
        let (outputRead, outputWrite) = try Spawn.pipe()
        let pid = try Spawn.start(
            KeyringHarness.writer, ["config-read", test.appID, test.name, "config.read"],
            environment: ProcessInfo.processInfo.environment, standardInput: .descriptor(inputRead),
            standardOutput: .descriptor(outputWrite), standardError: .file(errors))
        close(inputRead)
        close(outputWrite)
        let output = FileHandle(fileDescriptor: outputRead, closeOnDealloc: true)
        let input = FileHandle(fileDescriptor: inputWrite, closeOnDealloc: true)
        var status: Int32 = 0
        defer {
            try? input.close()
            waitpid(pid, &status, 0)
        }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        let ready = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let stderr = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
        try #require(ready == "ready 3", "config-read: \(ready.debugDescription), \(stderr.suffix(500))")
        return try CoreScan.take(of: pid, secrets: secrets, in: folder)
    }
}
