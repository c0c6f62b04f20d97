import Foundation
import SecureDictionaryTestSupport
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What a finished child process left behind (SecureDictionaryTestSupport's runner).
typealias ProcessResult = ChildProcess.Output

extension ChildProcess.Output {
    /// The last non-empty line of stdout: where workers put their JSON reply.
    var lastLine: String {
        text.split(separator: "\n", omittingEmptySubsequences: true).last.map(String.init) ?? ""
    }
}

/// A mutable box that background threads fill in.
final class Box<T: Sendable>: Sendable {
    private let storage: Mutex<T>
    init(_ value: T) { storage = Mutex(value) }
    var value: T {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
    func modify<R>(_ body: (inout T) -> R) -> R { storage.withLock { body(&$0) } }
}

enum Subprocess {
    /// The environment children get: ours, plus `extra` (a `nil` value removes a variable).
    static func environment(_ extra: [String: String?]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for (key, value) in extra { environment[key] = value }
        return environment
    }

    /// Runs a program to completion (or kills it at `timeout`), capturing both outputs; a
    /// program that cannot be started gives status 127.
    static func run(
        _ program: String, _ arguments: [String], environment extra: [String: String?] = [:],
        stdin input: Data? = nil, timeout: Duration = .seconds(300)
    ) -> ProcessResult {
        do {
            return try ChildProcess.run(
                program, arguments, input: input ?? Data(), environment: environment(extra), timeout: timeout)
        } catch {
            return ProcessResult(status: 127, stdout: Data(), stderrBytes: Data("cannot start \(program): \(error)".utf8))
        }
    }
}

func formatMilliseconds(_ value: Double) -> String {
    value < 10 ? String(format: "%.1f ms", value) : String(format: "%.0f ms", value)
}
