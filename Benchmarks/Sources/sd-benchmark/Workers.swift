import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// Starts this executable again as a worker process (`sd-benchmark __worker …`).
struct WorkerLauncher {
    let executable: String

    init() throws {
        executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    }

    struct Launched {
        let child: LiveChild

        /// Waits for the worker; its standard output, or an error with its standard error.
        func finish() throws -> String {
            let output = child.finish(timeout: .seconds(3_600))
            guard output.succeeded else {
                throw BenchmarkError("worker \(child.pid) failed (\(output.how)): \(output.stderr)")
            }
            return output.text
        }
    }

    func launch(_ arguments: [String]) throws -> Launched {
        Launched(child: try LiveChild(executable, ["__worker"] + arguments))
    }
}

/// The hidden `__worker` subcommand: work done in a process of its own.
///
///     __worker contend NAME INDEX COUNT START_NS
///         opens NAME, waits until CLOCK_MONOTONIC reaches START_NS, then sets its own key
///         COUNT times; prints "t <start ns> <end ns>" for each mutation.
///     __worker ring NAME INDEX COUNT START_NS PROCESSES
///         the same, taking turns: waits for a token on its FIFO, mutates, passes the token
///         to the next worker's FIFO (worker 0 starts at START_NS); times each setValue.
///     __worker cold library|raw NAME
///         the first init of NAME (library), or the first raw lookup of its raw item, in this
///         process; prints "cold <seconds>".
///     __worker memory library|raw NAME
///         writes a ~1 MiB dictionary (library) or the same blob (raw libsecret) and prints
///         "memory <idle RSS> <peak above idle> <blob bytes>", in bytes.
///     __worker resident library|swift
///         opens the 100 dictionaries of `memory-open-100`, or decodes their entries into
///         `[String: Value]`s, and prints "resident <idle RSS> <RSS above idle> <VmLck>".
enum Worker {
    static func contendedKey(_ index: Int) -> String { "worker-\(index)" }

    static func run(_ arguments: [String]) throws {
        switch arguments.first {
        case "contend" where arguments.count == 5:
            guard let index = Int(arguments[2]), let count = Int(arguments[3]), let start = UInt64(arguments[4]) else {
                throw BenchmarkError("bad contend arguments")
            }
            try contend(name: arguments[1], index: index, count: count, start: start)
        case "ring" where arguments.count == 6:
            guard let index = Int(arguments[2]), let count = Int(arguments[3]), let start = UInt64(arguments[4]),
                let processes = Int(arguments[5])
            else {
                throw BenchmarkError("bad ring arguments")
            }
            try ring(name: arguments[1], index: index, count: count, start: start, processes: processes)
        case "cold" where arguments.count == 3:
            try cold(mode: arguments[1], name: arguments[2])
        case "memory" where arguments.count == 3:
            try memory(mode: arguments[1], name: arguments[2])
        case "resident" where arguments.count == 2:
            try resident(mode: arguments[1])
        default:
            throw BenchmarkError("unknown worker command \(arguments)")
        }
    }

    /// The options of every worker's instance: a deadline well above any call here.
    private static let options = SecureDictionary.Options(timeout: .seconds(30))

    private static func openDictionary(_ name: String) throws -> SecureDictionary {
        try SecureDictionary(name: name, applicationID: Benchmark.applicationID, options: options)
    }

    /// Sleeps until CLOCK_MONOTONIC reaches `start` (nanoseconds).
    private static func wait(until start: UInt64) {
        var until = timespec(tv_sec: Int(start / 1_000_000_000), tv_nsec: Int(start % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nil) == EINTR {}
    }

    /// Makes worker `index`'s `count` mutations, each after `before()` and followed by
    /// `after()`, both untimed; prints "t <start ns> <end ns>" for each.
    private static func timedMutations(
        _ dictionary: SecureDictionary, index: Int, count: Int, before: () throws -> Void = {},
        after: () throws -> Void = {}
    ) throws {
        var times: [(start: UInt64, end: UInt64)] = []
        times.reserveCapacity(count)
        for mutation in 0..<count {
            try before()
            let start = Timer.monotonicNanoseconds()
            try dictionary.setValue(Fixtures.alternatingValues(mutation), forKey: contendedKey(index))
            times.append((start, Timer.monotonicNanoseconds()))
            try after()
        }
        print(times.map { "t \($0.start) \($0.end)" }.joined(separator: "\n"))
    }

    private static func contend(name: String, index: Int, count: Int, start: UInt64) throws {
        let dictionary = try openDictionary(name)
        wait(until: start)
        try timedMutations(dictionary, index: index, count: count)
    }

    /// The FIFO through which worker `index` receives the token, in the private runtime folder.
    static func ringPath(_ name: String, _ index: Int) -> String {
        let folder = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"] ?? NSTemporaryDirectory()
        return "\(folder)/sd-benchmark-\(name)-ring-\(index)"
    }

    private static func ring(name: String, index: Int, count: Int, start: UInt64, processes: Int) throws {
        let dictionary = try openDictionary(name)
        // O_RDWR: opening a FIFO this way never blocks, and it never reports end-of-file.
        func openFIFO(_ index: Int) throws -> Int32 {
            let path = ringPath(name, index)
            if mkfifo(path, 0o600) != 0 && errno != EEXIST { throw BenchmarkError("mkfifo \(path) failed") }
            let descriptor = open(path, O_RDWR | O_CLOEXEC)
            guard descriptor >= 0 else { throw BenchmarkError("cannot open \(path)") }
            return descriptor
        }
        let inbox = try openFIFO(index)
        let next = try openFIFO((index + 1) % processes)
        defer {
            close(inbox)
            close(next)
            unlink(ringPath(name, index))
        }
        wait(until: start)
        var token: UInt8 = 1
        if index == 0 { guard write(inbox, &token, 1) == 1 else { throw BenchmarkError("cannot start the ring") } }
        try timedMutations(
            dictionary, index: index, count: count,
            before: {
                while true {
                    let got = read(inbox, &token, 1)
                    if got == 1 { break }
                    if got < 0 && errno == EINTR { continue }
                    throw BenchmarkError("the token ring broke")
                }
            },
            after: { guard write(next, &token, 1) == 1 else { throw BenchmarkError("cannot pass the token") } })
    }

    private static func cold(mode: String, name: String) throws {
        let seconds: Double
        switch mode {
        case "library":
            let options = Self.options  // made before the clock starts
            var dictionary: SecureDictionary?
            seconds = try Timer.time {
                dictionary = try SecureDictionary(name: name, applicationID: Benchmark.applicationID, options: options)
            }
            guard dictionary?.count == 1000 else {
                throw BenchmarkError("the cold init loaded \(dictionary?.count ?? -1) entries")
            }
        case "raw":
            let raw = RawLibSecret()
            var length: Int?
            seconds = try Timer.time { length = try raw.lookupLength(service: Benchmark.rawService(name)) }
            guard length != nil else { throw BenchmarkError("the cold raw lookup found nothing") }
        default:
            throw BenchmarkError("unknown cold mode \(mode)")
        }
        print("cold \(seconds)")
    }

    /// 1,024 entries of 1,000 bytes each (half strings, half data): a ~1 MiB blob; and last
    /// the "warm-up" entry of the small write made before it.
    static func oneMebibyteEntries() -> [String: PropertyListValue] {
        var generator = SplitMix64(seed: 1024)
        var entries: [String: PropertyListValue] = [:]
        for index in 0..<1024 {
            entries[Fixtures.key(index)] =
                index % 2 == 0
                ? .string(Fixtures.token(1000, &generator))
                : .data(Fixtures.bytes(1000, seed: UInt64(index)))
        }
        entries["warm-up"] = "warm"
        return entries
    }

    private static func memory(mode: String, name: String) throws {
        let entries: [String: PropertyListValue]
        let idle: Int
        let peak: Int
        switch mode {
        case "library":
            let dictionary = try openDictionary(name)
            // One small write first: the connection, the lane's thread and GLib's one-time
            // allocations are not part of writing 1 MiB.
            try dictionary.setValue("warm", forKey: "warm-up")
            entries = oneMebibyteEntries()
            idle = try ProcessMemory.residentBytes()
            try ProcessMemory.resetPeak()
            try dictionary.update { $0.dictionary = entries }
            peak = try ProcessMemory.peakBytes()
        case "raw":
            let raw = RawLibSecret()
            let service = Benchmark.rawService(name)
            try raw.store(Array("warm".utf8), service: service)
            entries = oneMebibyteEntries()
            let blob = try Fixtures.blob(entries)
            idle = try ProcessMemory.residentBytes()
            try ProcessMemory.resetPeak()
            try raw.store(blob, service: service)
            peak = try ProcessMemory.peakBytes()
        default:
            throw BenchmarkError("unknown memory mode \(mode)")
        }
        let blobBytes = try Fixtures.blob(entries).count
        print("memory \(idle) \(peak - idle) \(blobBytes)")
    }
}

/// Resident memory of this process, from /proc/self/status.
enum ProcessMemory {
    static func residentBytes() throws -> Int { try field("VmRSS:") }
    static func peakBytes() throws -> Int { try field("VmHWM:") }
    static func lockedBytes() throws -> Int { try field("VmLck:") }

    /// Sets the peak (VmHWM) to the current resident size (Linux ≥ 4.0: "5" > clear_refs).
    static func resetPeak() throws {
        let descriptor = open("/proc/self/clear_refs", O_WRONLY)
        guard descriptor >= 0 else { throw BenchmarkError("cannot open /proc/self/clear_refs") }
        defer { close(descriptor) }
        guard write(descriptor, "5", 1) == 1 else { throw BenchmarkError("cannot reset the peak resident size") }
    }

    private static func field(_ name: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) }),
            let kilobytes = Int(line.dropFirst(name.count).trimmingCharacters(in: .whitespaces).split(separator: " ")[0])
        else { throw BenchmarkError("no \(name) in /proc/self/status") }
        return kilobytes * 1024
    }
}
