import Foundation

/// Where a byte of a core file (from gdb's `gcore`) was in the process: its memory (heap and
/// other mappings), a thread's stack, or the CPU registers saved in the core's notes.
///
/// Why: a copy of a secret in the heap is a buffer someone freed without wiping, which the
/// library must never leave. A copy in a saved vector register (`memcpy` moves bytes through
/// them: AVX-512 registers hold 64) or in a dead stack frame below a thread's stack pointer
/// is residue no library can wipe; it is reported, but it is not a leak of a buffer.
struct CoreLayout {
    enum Place { case memory, stack, registers }

    private struct Region {
        let start: UInt64, end: UInt64, offset: Int, name: String
        var size: Int { Int(end - start) }
    }

    private let regions: [Region]
    private let stackPointers: [UInt64]

    /// Reads the layout with `gdb -batch -c CORE`; `nil` when gdb cannot tell.
    init?(core: URL) {
        let result = Subprocess.run(
            "/usr/bin/gdb",
            [
                "-batch", "-ex", "maint info sections",
                "-ex", "thread apply all print/x $sp", "-c", core.path,
            ],
            timeout: .seconds(120))
        var regions: [Region] = []
        var pointers: [UInt64] = []
        for line in result.text.split(separator: "\n") {
            // " [3]      0x7ffd27cf1000->0x7ffd27d12000 at 0x11a3f000: load138 ALLOC LOAD HAS_CONTENTS"
            if let arrow = line.range(of: "->0x"), let at = line.range(of: " at 0x"),
                let colon = line.range(of: ": ", range: at.upperBound..<line.endIndex),
                let startText = line[..<arrow.lowerBound].split(separator: " ").last?.dropFirst(2),
                let start = UInt64(startText, radix: 16),
                let end = UInt64(line[arrow.upperBound...].prefix { $0.isHexDigit }, radix: 16),
                let offset = Int(line[at.upperBound..<colon.lowerBound], radix: 16)
            {
                let name = line[colon.upperBound...].split(separator: " ").first.map(String.init) ?? ""
                regions.append(Region(start: start, end: end, offset: offset, name: name))
            } else if line.hasPrefix("$"), let value = line.split(separator: "0x").last, let pointer = UInt64(value, radix: 16) {
                pointers.append(pointer)
            }
        }
        guard !regions.isEmpty, !pointers.isEmpty else { return nil }
        self.regions = regions
        stackPointers = pointers
    }

    /// Where the byte at `offset` of the core file was.
    func place(ofOffset offset: Int) -> Place {
        let containing = regions.filter { offset >= $0.offset && offset < $0.offset + $0.size }
        if containing.contains(where: { $0.name.hasPrefix(".reg") || $0.name.hasPrefix("note") }) { return .registers }
        for region in containing {
            let address = region.start + UInt64(offset - region.offset)
            // A region holding a thread's stack pointer is that thread's stack; bytes below
            // the pointer are dead frames.
            if stackPointers.contains(where: { $0 >= region.start && $0 < region.end })
                && address < (stackPointers.first { $0 >= region.start && $0 < region.end } ?? 0)
            {
                return .stack
            }
        }
        return .memory
    }
}
