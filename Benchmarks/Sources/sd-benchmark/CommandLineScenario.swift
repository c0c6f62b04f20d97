import Foundation
import SecureDictionary

#if canImport(Glibc)
    import Glibc
#endif

/// A whole process, from `posix_spawn` to `wait4`: its wall time.
struct ProcessRun {
    var seconds: Double

    /// The peak resident memory of `arguments`, as GNU time reports it. Not measured by
    /// this process: a child made with `posix_spawn` (vfork) or `fork` counts its parent's
    /// resident pages until it execs, so its `ru_maxrss` would be this benchmark's size.
    /// GNU time is small, so what its child inherits is negligible.
    static func peakBytes(_ arguments: [String], input: String = "") throws -> Int {
        let report = NSTemporaryDirectory() + "sd-benchmark-rss-\(getpid())"
        defer { unlink(report) }
        _ = try run(["/usr/bin/time", "-f", "%M", "-o", report] + arguments, input: input)
        let text = try String(contentsOfFile: report, encoding: .utf8)
        guard let kibibytes = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchmarkError("GNU time printed \(text)")
        }
        return kibibytes * 1024
    }

    /// Runs `arguments` (the first is an absolute path) with `input` on standard input and
    /// output discarded, and times it; throws unless it exits 0.
    static func run(_ arguments: [String], input: String = "") throws -> ProcessRun {
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw BenchmarkError("pipe failed") }
        // Small enough for the pipe's buffer: written before the program starts.
        _ = input.utf8CString.withUnsafeBufferPointer { write(pipe[1], $0.baseAddress, $0.count - 1) }
        close(pipe[1])
        defer { close(pipe[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipe[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let started = Timer.monotonicNanoseconds()
        guard posix_spawn(&pid, arguments[0], &actions, nil, argv, environ) == 0 else {
            throw BenchmarkError("cannot start \(arguments[0])")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw BenchmarkError("wait4 failed for \(arguments[0])") }
        }
        let seconds = Double(Timer.monotonicNanoseconds() - started) / 1e9
        // Exited by itself (low 7 bits 0) with status 0.
        guard status & 0x7F == 0, (status >> 8) & 0xFF == 0 else {
            throw BenchmarkError("\(arguments.joined(separator: " ")) failed (wait status \(status))")
        }
        return ProcessRun(seconds: seconds)
    }
}

extension Benchmark {
    /// The command-line rows: `secure-dict read`/`write` of one key against
    /// `secret-tool lookup`/`store` of the same value, each a new process, alternating; and
    /// `secure-dict --help`. `SD_BENCHMARK_CLI` names the `secure-dict` to run (scripts/benchmark
    /// builds it in release).
    func commandLine() throws {
        guard let cli = ProcessInfo.processInfo.environment["SD_BENCHMARK_CLI"] else {
            throw BenchmarkError("SD_BENCHMARK_CLI is not set: run through scripts/benchmark")
        }
        let secretTool = "/usr/bin/secret-tool"
        let name = "cli"
        let value = "tok-8f2a91c4-5be0-4c1d-a7f3-0d9e6b1c2a77"
        let rawService = Self.rawService(name)
        let app = ["--app", Self.applicationID, "--name", name]
        _ = try ProcessRun.run([cli, "write"] + app + ["token", value])
        _ = try ProcessRun.run([secretTool, "store", "--label", "sd-benchmark", "service", rawService], input: value)

        let sampling = plan.coldStarts
        /// Alternating samples of both commands: wall times, then (fewer) peak RSS figures.
        func compare(_ library: [String], _ baseline: [String], input: String = "") throws -> (
            times: ([Double], [Double]), peaks: ([Double], [Double])
        ) {
            var times: ([Double], [Double]) = ([], [])
            var peaks: ([Double], [Double]) = ([], [])
            for index in 0..<(sampling.warmup + sampling.samples) {
                let oursFirst = index % 2 == 0
                let first = try oursFirst ? ProcessRun.run(library) : ProcessRun.run(baseline, input: input)
                let second = try oursFirst ? ProcessRun.run(baseline, input: input) : ProcessRun.run(library)
                guard index >= sampling.warmup else { continue }
                times.0.append((oursFirst ? first : second).seconds)
                times.1.append((oursFirst ? second : first).seconds)
            }
            for _ in 0..<max(3, sampling.samples / 4) {
                peaks.0.append(Double(try ProcessRun.peakBytes(library)))
                peaks.1.append(Double(try ProcessRun.peakBytes(baseline, input: input)))
            }
            return (times, peaks)
        }
        let margin = 8.0 * 1024 * 1024
        func rows(
            _ id: String, _ operation: String, _ baselineName: String,
            _ runs: (times: ([Double], [Double]), peaks: ([Double], [Double]))
        ) {
            report.rows.append(
                TargetRow(
                    id: id, operation: "`secure-dict \(operation)`, whole process", unit: .seconds,
                    library: Stats(runs.times.0), baselineName: "`secret-tool \(baselineName)`",
                    baseline: Stats(runs.times.1), kind: .atMost, target: 1.25, blobBytes: value.utf8.count,
                    note: "one new process per sample, alternating; wall time from posix_spawn to waitpid"))
            report.rows.append(
                TargetRow(
                    id: id + "-rss", operation: "`secure-dict \(operation)`, peak RSS", unit: .bytes,
                    library: Stats(runs.peaks.0), baselineName: "`secret-tool \(baselineName)`'s + 8 MiB",
                    baseline: Stats(runs.peaks.1.map { $0 + margin }), kind: .atMost, target: 1,
                    blobBytes: value.utf8.count, note: "GNU time's maximum resident set size, alternating runs"))
        }
        rows(
            "cli-read", "read KEY", "lookup",
            try compare([cli, "read"] + app + ["token"], [secretTool, "lookup", "service", rawService]))
        rows(
            "cli-write", "write KEY VALUE", "store",
            try compare(
                [cli, "write"] + app + ["token", value], [secretTool, "store", "--label", "sd-benchmark", "service", rawService],
                input: value))

        var help: [Double] = []
        for index in 0..<(sampling.warmup + sampling.samples) {
            let run = try ProcessRun.run([cli, "--help"])
            if index >= sampling.warmup { help.append(run.seconds) }
        }
        report.rows.append(
            TargetRow(
                id: "cli-help", operation: "`secure-dict --help`, whole process", unit: .seconds, library: Stats(help),
                baselineName: "the target, 10 ms", baseline: Stats([0.010]), kind: .atMost, target: 1,
                blobBytes: 0, note: "one new process per sample"))
        try cleanUp(name)
        _ = try? ProcessRun.run(["/usr/bin/secret-tool", "clear", "service", rawService])
    }
}
