package import Dispatch

/// The one home of `Duration`'s conversions to the units that system calls, dispatch and
/// traces take, so that no caller spells `components.attoseconds` again (a conversion
/// written by hand once dropped everything below a second and made 400 ms a kill at once).
///
/// ```swift
/// let ready = poll(&poller, 1, Int32(clamping: left.milliseconds))
/// semaphore.wait(timeout: timeout.fromNow)
/// ```
///
/// Every unit rounds toward zero, as `components` does; a negative duration converts to a
/// negative number, and to the present moment on the dispatch clock.
extension Duration {
    /// Whole nanoseconds, clamped to `Int64`.
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return whole.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }

    /// Whole microseconds.
    package var microseconds: Int64 { nanoseconds / 1_000 }

    /// Whole milliseconds.
    package var milliseconds: Int64 { nanoseconds / 1_000_000 }

    /// In seconds, with the fraction.
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }

    /// As an interval of dispatch (never negative).
    package var dispatchInterval: DispatchTimeInterval { .nanoseconds(Int(clamping: max(0, nanoseconds))) }

    /// This long from now on the dispatch clock.
    package var fromNow: DispatchTime { .now() + dispatchInterval }
}
