import Synchronization

// What a verified write needs besides the keyring calls: the content to put back when no
// session stores the new one faithfully, and, for tests, a way to make a write go wrong.

/// What an item held before a write that is read back, kept across the write's tries.
///
/// ```swift
/// let prior = PriorContent()
/// try perform(timeout: timeout) { call in try Self.write(call, secret, to: item, in: collection, keeping: prior) }
/// ```
///
/// Captured once, by the first try on a session not yet verified, before it writes: after a
/// failed try the item may hold garbage, so a later try must not capture again.
final class PriorContent: Sendable {
    enum Content {
        /// There was no such item: putting it back means removing it.
        case absent
        case bytes(SecretBytes)
    }

    private let captured = Mutex<Content?>(nil)

    var content: Content? { captured.withLock { $0 } }
    var isCaptured: Bool { content != nil }

    func capture(_ content: Content) {
        captured.withLock { if $0 == nil { $0 = content } }
    }
}

/// Makes the next writes send other bytes than asked, as a provider that mangles secrets
/// would: the write's read-back then differs. Tests only (through `@testable import`).
///
/// ```swift
/// let fault = ManglingFault(writes: 3)   // every try of one write
/// let store = SecretServiceStore(client: LibSecretClient(fault: fault))
/// ```
///
/// Counts every write sent, restoring the prior content included.
final class ManglingFault: Sendable {
    private let remaining: Mutex<Int>

    init(writes: Int) { remaining = Mutex(writes) }

    /// Whether this write is to be mangled (counting it).
    func takeOne() -> Bool {
        remaining.withLock { count in
            guard count > 0 else { return false }
            count -= 1
            return true
        }
    }

    /// `secret` with its last byte flipped (one zero byte for an empty one).
    static func mangled(_ secret: SecretBytes) -> SecretBytes {
        var bytes = secret.array
        defer { Wipe.bytes(&bytes) }
        if bytes.isEmpty { bytes = [0] } else { bytes[bytes.count - 1] ^= 0xFF }
        return SecretBytes.copying(bytes)
    }
}
