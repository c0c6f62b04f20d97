import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a core dump of a live process would hold, searched for 16-byte slices of secrets:
/// where each hit was in the process. A hit in its memory (heap, mappings, a live stack frame)
/// is a copy someone freed or kept unwiped; a hit in a dead frame of a thread's stack (below
/// its stack pointer) is a transient buffer left unwiped, counted apart (``onStacks``: the
/// small-item scan counts it as a leak, the reliability suite reports it). Used by the tests'
/// memory scans and the reliability suite (memory hygiene).
///
/// ```swift
/// let scan = try CoreScan.take(of: pid, secrets: ["token": tokenBytes])
/// #expect(scan.found.isEmpty)
/// ```
///
/// Why `/proc/PID/mem` and not gdb's `gcore`: a core holds the process's mappings that the
/// kernel's default `coredump_filter` keeps, less the pages marked `MADV_DONTDUMP` (`dd` in
/// `/proc/PID/smaps`). The scan reads exactly those (a superset, in fact: written pages of
/// private file mappings whole) while the process is stopped, in about a tenth of a second;
/// gcore wrote a 540 MB file and gdb read it back, 4 to 5 s a scan. The threads' stack
/// pointers come from `/proc/PID/task/TID/syscall`, which gives them for a stopped thread.
public struct CoreScan: Sendable {
    /// Fragments found in the process's memory, by secret (0 for a secret not found).
    public var inMemory: [String: Int] = [:]
    /// Fragments in dead frames of a thread's stack (below its stack pointer): copies a
    /// transient buffer on the stack left unwiped.
    public var onStacks: [String: Int] = [:]
    /// Where each fragment was, by secret: the address and its mapping, or the distance
    /// below a thread's stack pointer.
    public var places: [String: [String]] = [:]

    /// The secrets with at least one fragment in memory or in a dead stack frame.
    public var foundAnywhere: Set<String> { found.union(onStacks.filter { $0.value > 0 }.keys) }

    /// The secrets with at least one fragment in memory.
    public var found: Set<String> { Set(inMemory.filter { $0.value > 0 }.keys) }

    /// Why no scan could be made (a process gone, a file of /proc unreadable).
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// A tool of the system (`setpriv`, `python3`), or a failure naming it.
    public static func tool(_ name: String) throws(Failure) -> String {
        let path = ["/usr/bin/\(name)", "/bin/\(name)", "/usr/sbin/\(name)"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let path else { throw Failure(description: "\(name) is not installed: run scripts/install-system-deps") }
        return path
    }

    /// Stops `pid`, searches what a core of it would hold for every secret (a 16-byte slice
    /// from its middle), and lets it go on.
    ///
    /// - Throws: ``Failure`` when the process cannot be stopped or read (it exited, or this
    ///   process may not trace it).
    public static func take(of pid: Int32, secrets: [String: [UInt8]]) throws -> CoreScan {
        try stopped(pid) {
            let regions = try Region.dumped(of: pid)
            let stackPointers = try Self.stackPointers(of: pid)
            let memory = open("/proc/\(pid)/mem", O_RDONLY | O_CLOEXEC)
            guard memory >= 0 else { throw Failure(description: "/proc/\(pid)/mem: errno \(errno)") }
            defer { close(memory) }
            var scan = CoreScan()
            for name in secrets.keys { scan.inMemory[name] = 0 }
            for region in regions {
                guard let bytes = region.read(from: memory) else { continue }
                let stackPointer = stackPointers.first { region.range.contains($0) }
                bytes.withUnsafeBytes { bytes in
                    for (name, secret) in secrets {
                        let middle = secret.count / 2 - 8
                        for offset in positions(of: Array(secret[middle..<(middle + 16)]), in: bytes) {
                            let address = region.range.lowerBound + UInt64(offset)
                            let hex = "0x" + String(address, radix: 16)
                            if let stackPointer, address < stackPointer {
                                scan.onStacks[name, default: 0] += 1
                                scan.places[name, default: []].append("\(hex): \(stackPointer - address) B below a thread's sp")
                            } else {
                                scan.inMemory[name, default: 0] += 1
                                let what = stackPointer == nil ? "in \(region.name)" : "a live frame, above a thread's sp"
                                scan.places[name, default: []].append("\(hex) \(what)")
                            }
                        }
                    }
                }
            }
            return scan
        }
    }

    /// Where `needle` starts in `haystack` (every start position counts): for the core scans
    /// here, the keyring tests' own and the reliability suite's searches.
    ///
    /// ```swift
    /// let hits = data.withUnsafeBytes { CoreScan.positions(of: Array("canary".utf8), in: $0) }
    /// ```
    public static func positions(of needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> [Int] {
        guard let first = needle.first, haystack.count >= needle.count, let base = haystack.baseAddress else { return [] }
        var found: [Int] = []
        var offset = 0
        let last = haystack.count - needle.count
        needle.withUnsafeBytes { pattern in
            while offset <= last {
                // memchr for the first byte (fast), then compare the rest.
                guard let hit = memchr(base + offset, Int32(first), last - offset + 1) else { break }
                let position = base.distance(to: UnsafeRawPointer(hit))
                if memcmp(base + position, pattern.baseAddress!, needle.count) == 0 { found.append(position) }
                offset = position + 1
            }
        }
        return found
    }

    /// Runs `body` while every thread of `pid` is stopped (SIGSTOP, as a debugger's attach
    /// does), then continues the process.
    private static func stopped<T>(_ pid: Int32, _ body: () throws -> T) throws -> T {
        guard kill(pid, SIGSTOP) == 0 else { throw Failure(description: "process \(pid) cannot be stopped: errno \(errno)") }
        defer { kill(pid, SIGCONT) }
        for _ in 0..<1_000 {
            if try threadStates(of: pid).allSatisfy({ $0 == "T" || $0 == "t" }) { return try body() }
            usleep(2_000)
        }
        throw Failure(description: "process \(pid) did not stop within 2 s")
    }

    /// Each thread's state letter (`/proc/PID/task/TID/stat`'s third field).
    private static func threadStates(of pid: Int32) throws -> [Character] {
        try threads(of: pid).map { thread in
            let stat = try text("/proc/\(pid)/task/\(thread)/stat")
            // The command in parentheses may hold spaces: the state follows its last ")".
            guard let close = stat.lastIndex(of: ")"), let state = stat[stat.index(after: close)...].first(where: { $0 != " " })
            else { throw Failure(description: "no state in \(stat)") }
            return state
        }
    }

    /// Each stopped thread's stack pointer: `/proc/PID/task/TID/syscall` ends with it and the
    /// program counter ("NR ARGS… SP PC", or "-1 SP PC" outside a system call).
    private static func stackPointers(of pid: Int32) throws -> [UInt64] {
        try threads(of: pid).map { thread in
            let fields = try text("/proc/\(pid)/task/\(thread)/syscall").split(separator: " ")
            guard fields.count >= 3, let pointer = UInt64(fields[fields.count - 2].dropFirst(2), radix: 16) else {
                throw Failure(description: "no stack pointer for thread \(thread) of \(pid): \(fields)")
            }
            return pointer
        }
    }

    private static func threads(of pid: Int32) throws -> [String] {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else {
            throw Failure(description: "process \(pid) is gone")
        }
        return tasks
    }

    /// A file of /proc, whole (they report a size of 0).
    static func text(_ path: String) throws -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw Failure(description: "\(path) cannot be read") }
        defer { try? handle.close() }
        return String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
    }

    /// One mapping of the process that a core dump would hold.
    struct Region {
        let range: Range<UInt64>
        let name: String

        /// The mappings a core would hold (the kernel's default `coredump_filter`, 0x33):
        /// anonymous ones, shared memory (memfd, /dev/shm) and written pages of private file
        /// mappings; never a mapping marked `MADV_DONTDUMP` (`dd`), an unreadable one, or one
        /// with no page in memory or swap.
        static func dumped(of pid: Int32) throws -> [Region] {
            var regions: [Region] = []
            var current: (range: Range<UInt64>, name: String, readable: Bool, file: Bool)?
            var resident = false
            var written = false
            func finish(_ flags: Substring) {
                defer { current = nil }
                guard let mapping = current, mapping.readable, resident, !flags.split(separator: " ").contains("dd") else {
                    return
                }
                let shared = ["/memfd:", "/dev/shm/", "/SYSV"].contains { mapping.name.hasPrefix($0) }
                if !mapping.file || shared || written { regions.append(Region(range: mapping.range, name: mapping.name)) }
            }
            for line in try CoreScan.text("/proc/\(pid)/smaps").split(separator: "\n") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                if let first = fields.first, first.contains("-"), !first.hasSuffix(":") {
                    let bounds = first.split(separator: "-").compactMap { UInt64($0, radix: 16) }
                    guard bounds.count == 2, fields.count >= 5 else { continue }
                    let name = fields.count > 5 ? fields[5...].joined(separator: " ") : "anonymous"
                    current = (bounds[0]..<bounds[1], name, fields[1].hasPrefix("r"), fields[4] != "0")
                    resident = false
                    written = false
                } else if fields.count >= 2, fields[0] == "Rss:" || fields[0] == "Swap:" {
                    resident = resident || fields[1] != "0"
                } else if fields.count >= 2, fields[0] == "Anonymous:" {
                    written = fields[1] != "0"
                } else if fields.first == "VmFlags:" {
                    finish(line.dropFirst("VmFlags:".count))
                }
            }
            return regions
        }

        /// The mapping's bytes, or nil where the kernel refuses them (`[vvar]`).
        func read(from memory: Int32) -> [UInt8]? {
            let count = Int(range.upperBound - range.lowerBound)
            var bytes = [UInt8](repeating: 0, count: count)
            var done = 0
            while done < count {
                let got = bytes.withUnsafeMutableBytes {
                    pread(memory, $0.baseAddress! + done, count - done, off_t(Int64(bitPattern: range.lowerBound + UInt64(done))))
                }
                if got <= 0 { return nil }
                done += got
            }
            return bytes
        }
    }
}
