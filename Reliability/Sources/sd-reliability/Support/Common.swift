import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// What a worker prints as its last stdout line.
struct WorkerReply: Codable, Sendable {
    var outcome: String  // "ok" or "error"
    var error: String?  // the case name
    var milliseconds: Double?
    var count: Int?
    var detail: String?

    static func parse(_ result: ProcessResult) -> WorkerReply? {
        try? JSONDecoder().decode(WorkerReply.self, from: Data(result.lastLine.utf8))
    }

    func print() {
        let data = (try? JSONEncoder().encode(self)) ?? Data("{}".utf8)
        Swift.print(String(decoding: data, as: UTF8.self))
        fflush(nil)
    }
}

func elapsedMilliseconds(since start: ContinuousClock.Instant) -> Double {
    (ContinuousClock.now - start) / .milliseconds(1)
}

func randomBytes(_ count: Int, using generator: inout some RandomNumberGenerator) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
}

func hex(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

func occurrences(of needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int {
    CoreScan.positions(of: needle, in: haystack).count
}

func occurrences(of needle: [UInt8], in data: Data) -> Int {
    data.withUnsafeBytes { occurrences(of: needle, in: $0) }
}

func occurrences(of needle: String, in data: Data) -> Int { occurrences(of: Array(needle.utf8), in: data) }

/// The SHA-256 hex digest, through the system's sha256sum (no crypto dependency needed).
func sha256Hex(_ bytes: [UInt8]) -> String {
    let result = Subprocess.run("/usr/bin/sha256sum", ["-b", "-"], stdin: Data(bytes), timeout: .seconds(60))
    return String(result.text.prefix(64))
}
