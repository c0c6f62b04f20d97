#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Secret bytes in memory the library allocated itself, wiped when the last reference goes:
/// its own copy, or a view of a ``Generation``'s region or of the secret libsecret decrypted
/// (in libsecret's own locked memory, which it wipes), which it keeps alive.
///
/// Why not `[UInt8]`: an array handed to a closure on another thread (the keyring lane, a
/// result box) shares its storage, so wiping "our" copy wipes a copy-on-write duplicate
/// while the shared original is freed later, unwiped. A class has one storage, wiped once,
/// whoever releases it last.
package final class SecretBytes: @unchecked Sendable {  // immutable after init; freed and wiped in deinit only
    private let base: UnsafeMutableRawBufferPointer
    /// What holds viewed bytes (wiped when it goes); `nil` when this holds its own copy.
    private let owner: (any AnyObject & Sendable)?

    package init(copying bytes: UnsafeRawBufferPointer) {
        base = .allocate(byteCount: max(bytes.count, 1), alignment: 1)
        if let source = bytes.baseAddress, bytes.count > 0 {
            base.baseAddress!.copyMemory(from: source, byteCount: bytes.count)
        }
        count = bytes.count
        owner = nil
    }

    /// The bytes `bytes` of `owner`, which this keeps alive and which wipes them (a
    /// ``Generation``, a libsecret secret value): no copy is made.
    init(viewing bytes: UnsafeRawBufferPointer, keptBy owner: any AnyObject & Sendable) {
        base = UnsafeMutableRawBufferPointer(mutating: bytes)
        count = bytes.count
        self.owner = owner
    }

    package static func copying(_ bytes: [UInt8]) -> SecretBytes {
        bytes.withUnsafeBytes { SecretBytes(copying: $0) }
    }

    package let count: Int

    package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(rebasing: base[0..<count]))
    }

    /// Whether both hold the same bytes (compared in place, no copy).
    package func holdsSameBytes(as other: SecretBytes) -> Bool {
        count == other.count
            && withUnsafeBytes { mine in
                other.withUnsafeBytes { theirs in count == 0 || memcmp(mine.baseAddress!, theirs.baseAddress!, count) == 0 }
            }
    }

    /// Whether the bytes begin with `prefix`.
    package func hasPrefix(_ prefix: [UInt8]) -> Bool {
        count >= prefix.count && withUnsafeBytes { prefix.elementsEqual($0.prefix(prefix.count)) }
    }

    /// A new array with the bytes; the caller owns (and should wipe) it.
    package var array: [UInt8] { withUnsafeBytes { Array($0) } }

    deinit {
        guard owner == nil else { return }
        explicit_bzero(base.baseAddress!, base.count)
        base.deallocate()
    }
}
