import Synchronization

/// One verified write's tries (``LibSecretClient/store(_:for:timeout:)``): what the item held
/// before the first bytes left, whether a try may have left garbage there, whether a read-back differed.
///
/// A try on an unproven session may store garbage (``ProviderTraits/sessionKeysMayDiffer``); a
/// later try that reads back exactly overwrote it. What the item held is recorded only before
/// any try sent anything: after that it may hold this write's bytes, or garbage.
final class VerifiedWrite: Sendable {
    enum Prior {
        /// There was no such item: putting it back means removing it.
        case absent
        case bytes(SecretBytes)
    }

    private struct State {
        var prior: Prior?
        var sent = false
        var unprovenWriteStands = false
        /// The keyring answered that it stored such a try's bytes (its read-back may still fail).
        var unprovenWriteStored = false
        var readBackDiffered = false
    }

    private let state = Mutex(State())

    /// What the item held before the first try sent anything (`nil`: not recorded).
    var prior: Prior? { state.withLock { $0.prior } }
    /// Whether the item's previous content should still be recorded: nothing sent yet.
    var needsPrior: Bool { state.withLock { $0.prior == nil && !$0.sent } }
    /// Whether a try on an unproven session sent bytes that no later read-back confirmed.
    var mayHaveDamaged: Bool { state.withLock { $0.unprovenWriteStands } }
    /// Whether such bytes were stored, as the keyring's answer to the write said: then,
    /// unless they were put back, the item holds what no read-back confirmed.
    var unconfirmedWriteStored: Bool { state.withLock { $0.unprovenWriteStands && $0.unprovenWriteStored } }
    /// Whether some try read back other bytes than it wrote.
    var readBackDiffered: Bool { state.withLock { $0.readBackDiffered } }

    func record(_ prior: Prior) {
        state.withLock { if !$0.sent && $0.prior == nil { $0.prior = prior } }
    }

    /// A try is about to send its bytes; `onVerifiedSession`: one that is not read back.
    func sending(onVerifiedSession: Bool) {
        state.withLock { state in
            state.sent = true
            // A write on a proven session replaces whatever an earlier try left.
            state.unprovenWriteStands = !onVerifiedSession
        }
    }

    /// The keyring answered the try's write without an error.
    func stored() { state.withLock { if $0.unprovenWriteStands { $0.unprovenWriteStored = true } } }

    func readBackMatches() { state.withLock { $0.unprovenWriteStands = false } }
    func readBackDiffers() { state.withLock { $0.readBackDiffered = true } }
}

#if ENABLE_TESTING_HOOKS
    /// Makes the next writes send other bytes than asked, and the next reads return other
    /// bytes than stored, as a session whose two ends derived different keys does.
    ///
    /// ```swift
    /// let fault = ManglingFault(writes: 3)   // every try of one write
    /// let store = SecretServiceStore(client: LibSecretClient(fault: fault))
    /// ```
    ///
    /// Counts every write sent, putting the previous content back included, and every read
    /// of a dictionary (``LibSecretClient/load(_:timeout:)``), not a write's read-back.
    final class ManglingFault: Sendable {
        private let remaining: Mutex<(writes: Int, reads: Int)>

        init(writes: Int = 0, reads: Int = 0) { remaining = Mutex((writes, reads)) }

        /// Whether this write is to be mangled (counting it).
        func takeWrite() -> Bool { remaining.withLock { Self.take(&$0.writes) } }

        /// Whether this read is to be garbled (counting it).
        func takeRead() -> Bool { remaining.withLock { Self.take(&$0.reads) } }

        private static func take(_ count: inout Int) -> Bool {
            guard count > 0 else { return false }
            count -= 1
            return true
        }

        /// `secret` with its last byte flipped (one zero byte for an empty one).
        static func mangled(_ secret: SecretBytes) -> SecretBytes {
            var bytes = secret.array
            defer { Wipe.bytes(&bytes) }
            if bytes.isEmpty { bytes = [0] } else { bytes[bytes.count - 1] ^= 0xFF }
            return SecretBytes(copying: bytes)
        }

        /// `secret` with every byte changed, as a key that differs decrypts it (padding intact).
        static func garbled(_ secret: SecretBytes) -> SecretBytes {
            var bytes = secret.array
            defer { Wipe.bytes(&bytes) }
            for index in bytes.indices { bytes[index] ^= 0xA5 }
            return SecretBytes(copying: bytes)
        }
    }
#endif
