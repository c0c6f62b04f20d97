#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// How many times to run an operation: `warmup` untimed runs, then `samples` timed ones.
struct Sampling: Sendable {
    var warmup: Int
    var samples: Int
}

/// Order statistics of a set of timings, in seconds (or any other unit, for memory).
struct Stats: Sendable, Encodable {
    /// The values themselves, for pooling; not written to JSON.
    var samples: [Double]
    var count: Int
    var median: Double
    var p99: Double
    var min: Double
    var max: Double
    var mean: Double

    /// Median (average of the two middle values for an even count) and p99 by nearest rank.
    init(_ values: [Double]) {
        precondition(!values.isEmpty, "no samples")
        let sorted = values.sorted()
        samples = values
        count = sorted.count
        let middle = sorted.count / 2
        median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        let rank = Int((0.99 * Double(sorted.count)).rounded(.up))
        p99 = sorted[Swift.max(0, Swift.min(sorted.count - 1, rank - 1))]
        min = sorted[0]
        max = sorted[sorted.count - 1]
        mean = sorted.reduce(0, +) / Double(sorted.count)
    }

    /// The same statistics with every value multiplied by `factor` (e.g. per-item figures).
    func scaled(by factor: Double) -> Stats {
        Stats(samples.map { $0 * factor })
    }

    private enum CodingKeys: String, CodingKey { case count, median, p99, min, max, mean }
}

/// One side of a comparison: `prepare` runs untimed before every run of `run`.
struct Side {
    var prepare: () throws -> Void = {}
    var run: () throws -> Void
}

enum Timer {
    static let clock = ContinuousClock()

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }

    /// Seconds taken by `body`.
    static func time(_ body: () throws -> Void) rethrows -> Double {
        let start = clock.now
        try body()
        return seconds(start.duration(to: clock.now))
    }

    /// Times one operation.
    static func measure(_ sampling: Sampling, _ side: Side) throws -> Stats {
        var samples: [Double] = []
        samples.reserveCapacity(sampling.samples)
        for index in 0..<(sampling.warmup + sampling.samples) {
            try side.prepare()
            let elapsed = try time(side.run)
            if index >= sampling.warmup { samples.append(elapsed) }
        }
        return Stats(samples)
    }

    /// Times two operations on the same data, alternating A B / B A from one sample to the
    /// next, so that drift and bursts of load from other processes hit both alike.
    static func compare(_ sampling: Sampling, _ a: Side, _ b: Side) throws -> (Stats, Stats) {
        var samplesA: [Double] = []
        var samplesB: [Double] = []
        for index in 0..<(sampling.warmup + sampling.samples) {
            let order = index % 2 == 0 ? [0, 1] : [1, 0]
            for which in order {
                let side = which == 0 ? a : b
                try side.prepare()
                let elapsed = try time(side.run)
                if index >= sampling.warmup {
                    if which == 0 { samplesA.append(elapsed) } else { samplesB.append(elapsed) }
                }
            }
        }
        return (Stats(samplesA), Stats(samplesB))
    }

    /// CLOCK_MONOTONIC in nanoseconds: one clock shared by every process of the machine.
    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}

/// Keeps the optimiser from removing a computation whose result is otherwise unused.
@inline(never) @_optimize(none)
func blackHole<T>(_ value: T) {}
