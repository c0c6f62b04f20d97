import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A core of a live process (gdb's `gcore`), searched for 16-byte slices of secrets: where
/// each hit was in the process. A hit in its memory (heap, mappings) is a copy someone freed
/// or kept unwiped; a hit in a dead stack frame (below a thread's stack pointer) or in the CPU
/// registers the core saved is residue, counted apart: a stack copy is one a transient buffer
/// left unwiped (``onStacks``, which the small-item scan counts as a leak), registers hold the
/// last bytes a thread touched. Used by the tests (`MemoryScan`) and the reliability suite
/// (memory hygiene).
///
/// ```swift
/// let scan = try CoreScan.take(of: pid, secrets: ["token": tokenBytes], in: scratchFolder)
/// #expect(scan.found.isEmpty)
/// ```
public struct CoreScan: Sendable {
    /// Fragments found in the process's memory, and as residue, by secret.
    public var inMemory: [String: Int] = [:]
    public var residue: [String: Int] = [:]
    /// The part of ``residue`` in dead frames of a thread's stack (below its stack pointer):
    /// copies a transient buffer on the stack left unwiped, which the library must wipe too.
    public var onStacks: [String: Int] = [:]
    /// Where each fragment in memory or on a stack was, by secret: the address, and the
    /// thread whose stack holds it with the distance below its stack pointer, if any.
    public var places: [String: [String]] = [:]

    /// The secrets with at least one fragment in memory or in a dead stack frame.
    public var foundAnywhereButRegisters: Set<String> { found.union(onStacks.filter { $0.value > 0 }.keys) }

    /// The secrets with at least one fragment in memory.
    public var found: Set<String> { Set(inMemory.filter { $0.value > 0 }.keys) }

    /// Why no scan could be made (gdb missing, no core).
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// A tool of the system (`gcore`, `gdb`), or a failure naming it.
    public static func tool(_ name: String) throws(Failure) -> String {
        let path = ["/usr/bin/\(name)", "/bin/\(name)", "/usr/sbin/\(name)"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let path else { throw Failure(description: "\(name) is not installed: run scripts/install-system-deps") }
        return path
    }

    /// Takes the core of `pid` into `folder` and searches it for every secret (a 16-byte slice
    /// from its middle); deletes the core.
    public static func take(of pid: Int32, secrets: [String: [UInt8]], in folder: String) throws -> CoreScan {
        let gcore = try tool("gcore")
        let prefix = "\(folder)/core"
        let dump = try ChildProcess.run(gcore, ["-o", prefix, "\(pid)"], timeout: .seconds(120))
        let file = "\(prefix).\(pid)"
        defer { try? FileManager.default.removeItem(atPath: file) }
        guard FileManager.default.fileExists(atPath: file) else { throw Failure(description: "gcore made no core: \(dump)") }
        return try search(core: file, secrets: secrets)
    }

    /// Searches the core `file` (one that gdb took, such as `gcore` of a process stopped at its
    /// exit) for every secret, as ``take(of:secrets:in:)`` does; leaves the file.
    public static func search(core file: String, secrets: [String: [UInt8]]) throws -> CoreScan {
        guard let core = try? Data(contentsOf: URL(fileURLWithPath: file), options: .alwaysMapped) else {
            throw Failure(description: "no core at \(file)")
        }
        let layout = try Layout(core: file)
        var scan = CoreScan()
        core.withUnsafeBytes { memory in
            for (name, secret) in secrets {
                let middle = secret.count / 2 - 8
                scan.inMemory[name] = 0
                for hit in positions(of: Array(secret[middle..<(middle + 16)]), in: memory) {
                    let place = layout.place(of: hit)
                    switch place.kind {
                    case .registers: scan.residue[name, default: 0] += 1
                    case .deadFrame:
                        scan.residue[name, default: 0] += 1
                        scan.onStacks[name, default: 0] += 1
                    case .memory: scan.inMemory[name]! += 1
                    }
                    if place.kind != .registers { scan.places[name, default: []].append(place.description) }
                }
            }
        }
        return scan
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

    /// Where each byte of the core file was, as gdb reads the core: its sections (memory
    /// regions and the notes that hold the threads' registers) and each thread's stack pointer.
    struct Layout {
        private struct Section {
            let start: UInt64, end: UInt64, offset: Int, name: String
        }

        private let sections: [Section]
        private let stackPointers: [UInt64]

        init(core: String) throws {
            let gdb = try CoreScan.tool("gdb")
            let output = try ChildProcess.run(
                gdb, ["-batch", "-ex", "maint info sections", "-ex", "thread apply all print/x $sp", "-c", core],
                timeout: .seconds(120))
            var sections: [Section] = []
            var pointers: [UInt64] = []
            for line in output.text.split(separator: "\n") {
                // " [3]      0x7ffd27cf1000->0x7ffd27d12000 at 0x11a3f000: load138 ALLOC LOAD HAS_CONTENTS"
                if let arrow = line.range(of: "->0x"), let at = line.range(of: " at 0x"),
                    let colon = line.range(of: ": ", range: at.upperBound..<line.endIndex),
                    let startText = line[..<arrow.lowerBound].split(separator: " ").last?.dropFirst(2),
                    let start = UInt64(startText, radix: 16),
                    let end = UInt64(line[arrow.upperBound...].prefix { $0.isHexDigit }, radix: 16),
                    let offset = Int(line[at.upperBound..<colon.lowerBound], radix: 16)
                {
                    let name = line[colon.upperBound...].split(separator: " ").first.map(String.init) ?? ""
                    sections.append(Section(start: start, end: end, offset: offset, name: name))
                } else if line.hasPrefix("$"), let value = line.split(separator: "0x").last,
                    let pointer = UInt64(value, radix: 16)
                {
                    pointers.append(pointer)
                }
            }
            guard !sections.isEmpty, !pointers.isEmpty else {
                throw Failure(description: "gdb could not read the core: \(output.stderr.suffix(300))")
            }
            self.sections = sections
            stackPointers = pointers
        }

        /// Where a byte of the core was.
        struct Place: CustomStringConvertible {
            enum Kind { case memory, deadFrame, registers }
            var kind: Kind
            var description: String
        }

        /// Where the byte at `offset` of the core was: in saved registers, in a dead frame of
        /// a thread's stack (with the distance below its stack pointer), or elsewhere in
        /// memory (a live frame of a stack, or the section gdb names).
        func place(of offset: Int) -> Place {
            let containing = sections.filter { offset >= $0.offset && UInt64(offset - $0.offset) < $0.end - $0.start }
            if containing.contains(where: { $0.name.hasPrefix(".reg") || $0.name.hasPrefix("note") }) {
                return Place(kind: .registers, description: "registers")
            }
            for section in containing {
                let address = section.start + UInt64(offset - section.offset)
                let hex = "0x" + String(address, radix: 16)
                if let pointer = stackPointers.first(where: { $0 >= section.start && $0 < section.end }) {
                    if address < pointer {
                        return Place(kind: .deadFrame, description: "\(hex): \(pointer - address) B below a thread's sp")
                    }
                    return Place(kind: .memory, description: "\(hex): a live frame, above a thread's sp")
                }
                return Place(kind: .memory, description: "\(hex) in \(section.name)")
            }
            return Place(kind: .memory, description: "core offset \(offset)")
        }
    }
}
