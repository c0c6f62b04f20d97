#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Overwrites memory the library owns with zeros in a way the compiler may not drop
/// (`explicit_bzero(3)`).
package enum Wipe {
    package static func bytes(_ buffer: inout [UInt8]) {
        buffer.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { explicit_bzero(base, raw.count) }
        }
        buffer.removeAll()
    }

    /// Wipes the bytes of every `Data` in `entries` whose storage is not shared with a copy
    /// held elsewhere (a shared one is copied on write and the copy is wiped instead, which
    /// leaves the caller's copy alone), then empties the dictionary. Strings cannot be
    /// wiped: Swift gives no mutable access to their storage.
    package static func entries(_ entries: inout [String: PropertyListValue]) {
        for key in Array(entries.keys) {
            guard var value = entries.removeValue(forKey: key) else { continue }
            value.wipeData()
        }
        entries.removeAll()
    }
}

extension PropertyListValue {
    /// Wipes owned `Data` bytes inside this value and leaves it an empty string.
    mutating func wipeData() {
        switch self {
        case .data(var data):
            self = .string("")  // drop this enum's reference first: `data` is now unique
            data.withUnsafeMutableBytes { raw in
                if let base = raw.baseAddress { explicit_bzero(base, raw.count) }
            }
        case .array(var elements):
            self = .string("")
            for index in elements.indices { elements[index].wipeData() }
        case .dictionary(var entries):
            self = .string("")
            Wipe.entries(&entries)
        default:
            self = .string("")
        }
    }
}
