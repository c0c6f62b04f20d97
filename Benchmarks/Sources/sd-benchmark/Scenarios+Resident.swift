import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// The memory rows: `update { }` on a dictionary of some size, and the resident memory of
/// many open dictionaries (what the library keeps per loaded dictionary).
extension Benchmark {
    /// Keys `update-1000` changes: ten of the dictionary's own.
    static let updatedKeys = (0..<10).map { Fixtures.key($0 * 97) }

    /// `update { }` changing 10 entries of a 1,000-entry dictionary vs a raw lookup plus a raw
    /// store of the same blob: a working copy (`Entries`), the check, the write.
    func updateTenOfThousand() throws {
        let name = "update-1000"
        let writes = try compareWrites(
            name, entries: Fixtures.mixedEntries(count: 1000), plan.writes, rawLookupFirst: true, inOneUpdate: true
        ) { sample in
            let value = Fixtures.alternatingValues(sample)
            return Self.updatedKeys.map { ($0, value) }
        }
        report.rows.append(
            TargetRow(
                id: "update-1000", operation: "update { } changing 10 entries, 1,000-entry dictionary", unit: .seconds,
                library: writes.library, baselineName: "raw lookup + raw store", baseline: writes.baseline, kind: .atMost,
                target: 1.15, blobBytes: writes.blobs[0].count))
        try cleanUp(name)
    }

    /// How many dictionaries the resident-memory row opens, and their entries.
    static let residentDictionaries = 100
    static let residentEntries = 1000

    /// Resident memory of a process holding 100 open 1,000-entry dictionaries, against the same
    /// entries decoded into 100 `Mutex<[String: Value]>` (what the cache held before it kept
    /// the stored blob in locked pages).
    func residentMemory(worker: WorkerLauncher) throws {
        let options = SecureDictionary.Options(collection: .session, timeout: .seconds(20))
        for index in 0..<Self.residentDictionaries {
            let dictionary = try SecureDictionary(
                name: "resident-\(index)", applicationID: Self.applicationID, options: options)
            try dictionary.update { $0.dictionary = Fixtures.mixedEntries(count: Self.residentEntries, seed: UInt64(index)) }
        }
        var library: [Double] = []
        var swift: [Double] = []
        var locked: [Int] = []
        for _ in 0..<plan.memoryRuns {
            for mode in ["library", "swift"] {
                let output = try worker.launch(["resident", mode]).finish()
                guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("resident ") }) else {
                    throw BenchmarkError("the resident worker printed no result")
                }
                let fields = line.split(separator: " ").compactMap { Int($0) }
                guard fields.count == 3 else { throw BenchmarkError("bad resident worker output") }
                if mode == "library" {
                    library.append(Double(fields[1]))
                    locked.append(fields[2])
                } else {
                    swift.append(Double(fields[1]))
                }
            }
        }
        for index in 0..<Self.residentDictionaries {
            _ = try SecureDictionary.delete(name: "resident-\(index)", applicationID: Self.applicationID, options: options)
        }
        report.rows.append(
            TargetRow(
                id: "memory-open-100", operation: "resident memory, 100 open 1,000-entry dictionaries", unit: .bytes,
                library: Stats(library), baselineName: "the same entries in 100 Mutex<[String: Value]>",
                baseline: Stats(swift), kind: .atMost, target: 1.5,
                note: "VmRSS above the process after its first dictionary, fresh process; VmLck with them open: "
                    + "\(Format.bytes(Double(locked.sorted()[locked.count / 2])))"))
    }
}

extension Worker {
    /// `__worker resident library|swift`: opens the 100 dictionaries of `memory-open-100`
    /// (library) or decodes their blobs into `[String: Value]`s (swift), keeps them, and
    /// prints "resident <idle RSS> <RSS above idle> <VmLck>", in bytes.
    static func resident(mode: String) throws {
        let options = SecureDictionary.Options(collection: .session, timeout: .seconds(30))
        // The connection, the lane's thread and GLib's one-time allocations first.
        let first = try SecureDictionary(name: "resident-0", applicationID: Benchmark.applicationID, options: options)
        let idle = try ProcessMemory.residentBytes()
        var kept: [AnyObject] = []
        for index in 0..<Benchmark.residentDictionaries {
            let dictionary = try SecureDictionary(
                name: "resident-\(index)", applicationID: Benchmark.applicationID, options: options)
            guard dictionary.count == Benchmark.residentEntries else {
                throw BenchmarkError("resident-\(index) holds \(dictionary.count) entries")
            }
            switch mode {
            case "library":
                kept.append(dictionary)
            case "swift":
                let blob = try BinaryPropertyListCoding.encode(dictionary.snapshot)
                kept.append(GuardedDictionary(try BinaryPropertyListCoding.decode(blob)))
            default:
                throw BenchmarkError("unknown resident mode \(mode)")
            }
        }
        let resident = try ProcessMemory.residentBytes()
        let locked = try ProcessMemory.lockedBytes()
        withExtendedLifetime((first, kept)) {}
        print("resident \(idle) \(resident - idle) \(locked)")
    }
}
