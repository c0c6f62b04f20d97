import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Scenario 5, second half: a seeded mutation fuzzer over the decoder
/// (`BinaryPropertyListCoding.decode`), in a worker process so that a crash is caught and
/// its input kept as a reproducer.
enum DecoderFuzzer {
    static func run(_ harness: Harness, _ report: Report) {
        let count = harness.sizes.fuzzInputs
        let check = "mutation fuzzer over BinaryPropertyListCoding.decode, \(count.formatted()) inputs"
        let target = "0 crashes, every input returns or throws SecureDictionaryError, ≤ 100 ms each"
        let progress = harness.scratchFile("fuzz-progress.bin")
        let seed: UInt64 = 0xF022_5EED
        let result = harness.worker(["fuzz", "\(seed)", "\(count)", progress.path], timeout: .seconds(3_600))
        guard !result.signaled && !result.timedOut, let reply = WorkerReply.parse(result) else {
            var note = "the fuzzer \(result.how)"
            if let data = try? Data(contentsOf: progress), data.count >= 4 {
                let reproducer = harness.root.appendingPathComponent("Reliability/.build/fuzz-crash-\(seed).bin")
                try? data.dropFirst(4).write(to: reproducer)
                note += "; the input being decoded is saved in \(reproducer.path)"
            }
            report.add(check, target: target, measured: "crashed (\(result.how))", pass: false, note: note)
            return
        }
        report.add(
            check, target: target, measured: reply.detail ?? "?", pass: reply.outcome == "ok",
            note: reply.error)
    }
}

extension Worker {
    /// `fuzz SEED COUNT PROGRESS_FILE`: decodes COUNT mutated blobs. Before each decode it
    /// writes the input to PROGRESS_FILE (4-byte length, then the bytes), so a crash leaves
    /// its reproducer behind.
    static func fuzz(_ arguments: [String]) {
        guard arguments.count == 3, let seed = UInt64(arguments[0]), let count = Int(arguments[1]) else { usage() }
        let progress = Glibc.open(arguments[2], O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var generator = SplitMix64(seed: seed)
        let seeds: [[UInt8]] = fuzzSeeds()
        var decoded = 0
        var rejected = 0
        var slow = 0
        var roundTripFailures = 0
        var slowest = 0.0
        var cases: [String: Int] = [:]
        let clock = ContinuousClock()
        let started = clock.now
        for index in 0..<count {
            var blob: [UInt8]
            if index % 10 == 9 {
                // Structured random: a valid header and trailer around random objects.
                let body = randomBytes(Int.random(in: 1...80, using: &generator), using: &generator)
                let objects = Int.random(in: 1...12, using: &generator)
                let table = (0..<objects).map { _ in UInt8(8 + Int.random(in: 0..<body.count, using: &generator)) }
                var trailer = [UInt8](repeating: 0, count: 6) + [1, 1]
                trailer +=
                    HandMadeBlob.bigEndian(UInt64(objects))
                    + HandMadeBlob.bigEndian(UInt64.random(in: 0..<UInt64(objects), using: &generator))
                trailer += HandMadeBlob.bigEndian(UInt64(8 + body.count))
                blob = Array("bplist00".utf8) + body + table + trailer
            } else {
                blob = seeds[Int.random(in: 0..<seeds.count, using: &generator)]
                for _ in 0..<Int.random(in: 1...6, using: &generator) { mutate(&blob, seeds: seeds, using: &generator) }
            }
            if progress >= 0 {
                var header = UInt32(blob.count).bigEndian
                var iov = [iovec(iov_base: &header, iov_len: 4)]
                blob.withUnsafeMutableBytes { raw in
                    iov.append(iovec(iov_base: raw.baseAddress, iov_len: raw.count))
                    _ = pwritev(progress, iov, Int32(iov.count), 0)
                }
            }
            let data = Data(blob)
            let start = clock.now
            do {
                let entries = try BinaryPropertyListCoding.decode(data)
                decoded += 1
                // What decodes must survive a round trip.
                if let again = try? BinaryPropertyListCoding.decode(BinaryPropertyListCoding.encode(entries, maximumSize: .max)),
                    again.count == entries.count
                {
                } else {
                    roundTripFailures += 1
                }
            } catch {
                rejected += 1
                cases[caseName(error), default: 0] += 1
            }
            let milliseconds = (clock.now - start) / .milliseconds(1)
            slowest = max(slowest, milliseconds)
            if milliseconds > 100 { slow += 1 }
        }
        let seconds = (clock.now - started) / .seconds(1)
        let byCase = cases.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let detail = String(
            format: "0 crashes; %d decoded, %d rejected (%@); %d round-trip failures; slowest %.2f ms; %d over 100 ms; %.1f s",
            decoded, rejected, byCase, roundTripFailures, slowest, slow, seconds)
        let fine = slow == 0 && roundTripFailures == 0 && cases["other"] == nil && decoded + rejected == count
        WorkerReply(
            outcome: fine ? "ok" : "error", error: fine ? nil : "slow or round-trip failures", count: count, detail: detail
        ).print()
    }

    static func fuzzSeeds() -> [[UInt8]] {
        var seeds: [[UInt8]] = [
            Blobs.valid, Blobs.set, Blobs.uid, Blobs.keyedArchive, Blobs.exponential(levels: 8, dictionaryRoot: true),
            Blobs.deep(levels: 70),
        ]
        let mixed: [String: PropertyListValue] = [
            "a": 1, "b": "héllo 😀", "c": [1, 2.5, true, .date(Date(timeIntervalSinceReferenceDate: 9))],
            "d": ["x": .data(Data([1, 2, 3])), "y": [[], [:], -7]], "long": .string(String(repeating: "z", count: 40)),
            "n": .integer(Int.min), "big": .integer(Int.max), "r": .real(-0.0),
        ]
        var wide: [String: PropertyListValue] = [:]
        for index in 0..<150 { wide["k\(index)"] = index.isMultiple(of: 3) ? .string("v\(index)") : .integer(index * 1_000) }
        for entries in [mixed, wide] {
            if let blob = try? BinaryPropertyListCoding.encode(entries) { seeds.append([UInt8](blob)) }
        }
        // Foundation's own writer (writing is safe; only its reader must never see stored bytes).
        if let foundation = try? PropertyListSerialization.data(
            fromPropertyList: ["a": 1, "b": ["x", 2.5, true], "c": Data([1, 2]), "s": String(repeating: "é", count: 20)]
                as NSDictionary,
            format: .binary, options: 0)
        {
            seeds.append([UInt8](foundation))
        }
        return seeds
    }

    static func mutate(_ blob: inout [UInt8], seeds: [[UInt8]], using generator: inout SplitMix64) {
        guard !blob.isEmpty else {
            blob = [UInt8(ascii: "b")]
            return
        }
        let position = Int.random(in: 0..<blob.count, using: &generator)
        let interesting: [UInt8] = [0x00, 0x01, 0x0F, 0x10, 0x13, 0x1F, 0x7F, 0x80, 0xA2, 0xC1, 0xD1, 0xFF]
        switch Int.random(in: 0..<9, using: &generator) {
        case 0: blob[position] ^= 1 << UInt8.random(in: 0...7, using: &generator)
        case 1: blob[position] = interesting.randomElement(using: &generator)!
        case 2: blob[position] = UInt8.random(in: 0...255, using: &generator)
        case 3: blob.removeLast(blob.count - position)
        case 4: blob.insert(contentsOf: randomBytes(Int.random(in: 1...8, using: &generator), using: &generator), at: position)
        case 5: blob.removeSubrange(position..<min(blob.count, position + Int.random(in: 1...8, using: &generator)))
        case 6:
            // Splice: a piece of another seed.
            let other = seeds.randomElement(using: &generator)!
            let start = Int.random(in: 0..<other.count, using: &generator)
            let piece = other[start..<min(other.count, start + Int.random(in: 1...16, using: &generator))]
            blob.replaceSubrange(position..<min(blob.count, position + piece.count), with: piece)
        case 7:
            // A big-endian integer at a random place: sizes, counts and offsets.
            let values: [UInt64] = [
                0, 1, 0x7F, 0xFF, 0x100, 0xFFFF, 0x7FFF_FFFF, 0xFFFF_FFFF, .max, .max / 2, UInt64(blob.count),
            ]
            let bytes = HandMadeBlob.bigEndian(values.randomElement(using: &generator)!).suffix(
                [1, 2, 4, 8].randomElement(using: &generator)!)
            blob.replaceSubrange(position..<min(blob.count, position + bytes.count), with: bytes)
        default:
            // The trailer, where one byte changes every interpretation.
            let trailer = max(0, blob.count - 1 - Int.random(in: 0..<32, using: &generator))
            blob[trailer] = interesting.randomElement(using: &generator)!
        }
    }
}
