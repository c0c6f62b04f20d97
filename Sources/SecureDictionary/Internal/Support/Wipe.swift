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
}
