import FoundationEssentials
import Glibc

/// A process, told apart from a later one that reuses its pid by its start time.
struct ProcessIdentity: Hashable, Sendable {
    let pid: pid_t
    /// Field 22 of `/proc/PID/stat`: clock ticks after boot.
    let start: UInt64

    /// The process `pid` now, or `nil` when there is none.
    init?(pid: pid_t) {
        guard let status = SessionProcesses.status(of: pid) else { return nil }
        self.pid = pid
        start = status.start
    }

    /// Whether the process is still the one identified (no other took its pid).
    var isCurrent: Bool { SessionProcesses.status(of: pid)?.start == start }
}

/// The processes of a `secure-dict keyring run` session, and how they are stopped.
///
/// A process belongs to the session when any of these holds:
/// - it carries the session's `XDG_RUNTIME_DIR` (the bus, the keyring, the command, and what
///   they start with their environment);
/// - it descends from such a process, or from `keyring run` itself, which is a child
///   subreaper (`PR_SET_CHILD_SUBREAPER`): a child that drops the environment (`env -i`,
///   `env -u`) and is orphaned stays below it (such a `sleep 12 &` would hold the
///   run's output open for 12 s);
/// - after `keyring run` was killed, it was a child of it when the watchdog last looked (every
///   quarter second), or descends from one.
enum SessionProcesses {
    struct Status {
        let parent: pid_t
        let start: UInt64
        let zombie: Bool
    }

    /// The parent, start time and state of `pid`, from `/proc/PID/stat`.
    static func status(of pid: pid_t) -> Status? {
        guard let stat = FileManager.default.contents(atPath: "/proc/\(pid)/stat") else { return nil }
        let text = String(decoding: stat, as: UTF8.self)
        // The command name, in parentheses, may hold spaces and parentheses: fields follow the last.
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0]: the state (field 3 of proc(5)), [1]: the parent (4), [19]: the start time (22).
        guard fields.count > 19, let parent = pid_t(fields[1]), let start = UInt64(fields[19]) else { return nil }
        return Status(parent: parent, start: start, zombie: fields[0] == "Z")
    }

    /// Every process now.
    static func table() -> [pid_t: Status] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        var table: [pid_t: Status] = [:]
        for entry in entries {
            if let pid = pid_t(entry), let status = status(of: pid) { table[pid] = status }
        }
        return table
    }

    /// The direct children of `pid` (`/proc/PID/task/*/children`: each thread's own).
    static func children(of pid: pid_t) -> [pid_t] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.flatMap { task in
            let text =
                FileManager.default.contents(atPath: "/proc/\(pid)/task/\(task)/children")
                .map { String(decoding: $0, as: UTF8.self) } ?? ""
            return text.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { pid_t($0) }
        }
    }

    /// Those of `pids` whose environment holds `XDG_RUNTIME_DIR=runtime`.
    static func marked(runtime: String, among pids: some Sequence<pid_t>) -> [pid_t] {
        let marker = Array("XDG_RUNTIME_DIR=\(runtime)".utf8)
        return pids.filter { pid in
            guard let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return false }
            return environ.split(separator: 0, omittingEmptySubsequences: true).contains { $0.elementsEqual(marker) }
        }
    }

    /// Every descendant of `roots` in `table` (not the roots themselves).
    static func descendants(of roots: Set<pid_t>, in table: [pid_t: Status]) -> Set<pid_t> {
        var children: [pid_t: [pid_t]] = [:]
        for (pid, status) in table { children[status.parent, default: []].append(pid) }
        var found = Set<pid_t>()
        var next = Array(roots)
        while let pid = next.popLast() {
            for child in children[pid] ?? [] where found.insert(child).inserted { next.append(child) }
        }
        return found
    }

    /// Stops the session: SIGCONT (a frozen process acts on nothing else) and SIGTERM to every
    /// process of it, SIGKILL to those left 3 s later. `also`: processes to stop besides;
    /// `roots`: processes whose descendants belong to it (and which do too, unless one is
    /// this process); `sparing`: processes to leave alone (the watchdog).
    ///
    /// `/proc` is scanned again on every round until two scans in a row, 50 ms apart, find
    /// nothing: one scan misses a process that a session process forks after it, and one
    /// whose `execve` is under way (its environment reads as empty until the new program's
    /// stack is set up). Such a survivor kept `keyring run`'s standard output open, so that
    /// its caller waited for the end of that output (a CI run lost a test's output this way).
    static func stop(
        runtime: String, also: [pid_t] = [], roots: [ProcessIdentity] = [], sparing: Set<pid_t> = []
    ) {
        var signaled: [pid_t: UInt64] = [:]
        var emptyScans = 0
        let termination = ContinuousClock.now.advanced(by: .seconds(3))
        let giveUp = termination.advanced(by: .seconds(2))
        let extra = Set(also.filter { kill($0, 0) == 0 })
        let rootPIDs = Set(roots.filter(\.isCurrent).map(\.pid))
        while emptyScans < 2, ContinuousClock.now < giveUp {
            let table = table()
            var found = Set(marked(runtime: runtime, among: table.keys)).union(extra).union(rootPIDs)
            found.formUnion(descendants(of: found, in: table))
            // Signaled before and still there: orphaned since, no longer below any of them.
            found.formUnion(signaled.filter { table[$0.key]?.start == $0.value }.keys)
            found.remove(getpid())
            found.subtract(sparing)
            for pid in found {
                var status: Int32 = 0
                waitpid(pid, &status, WNOHANG)  // our own children: reap them
            }
            found = found.filter { pid in kill(pid, 0) == 0 && status(of: pid).map { !$0.zombie } == true }
            let late = ContinuousClock.now >= termination
            for pid in found where late || signaled[pid] == nil {
                kill(pid, SIGCONT)
                kill(pid, late ? SIGKILL : SIGTERM)
            }
            for pid in found { signaled[pid] = table[pid]?.start ?? 0 }
            emptyScans = found.isEmpty ? emptyScans + 1 : 0
            usleep(50_000)
        }
    }
}
