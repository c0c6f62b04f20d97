import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A pure change applied to the cached entries, whose blob is encoded on another thread while
/// the caller checks the stored item (``ItemState`` rule 7).
///
/// ```swift
/// let speculation = SpeculativeWrite(entries: changed, basedOn: digest, limits: limits)
/// let check = try lockedCheck(limits, deadline)
/// var bytes: [UInt8] = []
/// if try speculation.moveBlob(into: &bytes, ifStoredIs: check.digest, until: deadline) { … }  // else: start over
/// ```
///
/// The blob is encoded straight into the storage it is moved out of, and moved by swapping,
/// so no second reference to its bytes ever exists: a wipe of the caller's array (or of the
/// stored one, when the speculation is discarded) reaches the bytes themselves rather than a
/// copy made on write.
final class SpeculativeWrite: Sendable {
    /// Below this many entries, encoding takes less than handing it to another thread
    /// (about 10 µs here; 100 entries encode in about 15 µs).
    static var minimumEntries: Int { 100 }

    let entries: [String: PropertyListValue]
    private let basis: StoredDigest
    private let encoded = Encoded()
    private let done = DispatchSemaphore(value: 0)

    /// What the encoder made, behind a lock. A pthread mutex (what `NSLock` wraps) rather
    /// than `Mutex`, whose futex the thread sanitizer cannot see: it reported these accesses
    /// as races.
    private final class Encoded: @unchecked Sendable {  // every access holds `mutex`
        struct State {
            var bytes: [UInt8] = []
            var failure: SecureDictionaryError?
            /// The caller stopped waiting: the encoder must not start, or must wipe what it made.
            var abandoned = false
        }

        /// Allocated once and never moved, as `pthread_mutex_t` requires.
        private let mutex: UnsafeMutablePointer<pthread_mutex_t> = {
            let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
            return mutex
        }()
        private var state = State()

        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deinitialize(count: 1)
            mutex.deallocate()
        }

        func withLock<R, E: Error>(_ body: (inout State) throws(E) -> R) throws(E) -> R {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            return try body(&state)
        }
    }

    init(entries: [String: PropertyListValue], basedOn digest: StoredDigest, limits: PropertyListLimits) {
        self.entries = entries
        basis = digest
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            encoded.withLock { encoded in
                guard !encoded.abandoned else { return }
                do throws(SecureDictionaryError) {
                    encoded.bytes = try BinaryPropertyList.blob(of: entries, limits: limits)
                } catch {
                    encoded.failure = error
                }
            }
            done.signal()
        }
    }

    /// Moves the encoded blob into `bytes` and returns `true` when the stored item is still
    /// the one the change was applied to; otherwise, or when the encoder has not finished by
    /// `deadline` (a thread pool too busy to start it), wipes the blob and returns `false`.
    ///
    /// - Throws: what encoding threw (``SecureDictionaryError/tooLarge(size:limit:)``…), when
    ///   the stored item is still the one the change was applied to.
    func moveBlob(
        into bytes: inout [UInt8], ifStoredIs digest: StoredDigest, until deadline: Deadline
    ) throws(SecureDictionaryError) -> Bool {
        guard digest == basis, wait(until: deadline) else {
            discard()
            return false
        }
        return try encoded.withLock { encoded throws(SecureDictionaryError) -> Bool in
            if let failure = encoded.failure { throw failure }
            swap(&bytes, &encoded.bytes)
            return true
        }
    }

    /// Wipes what the encoder made, and makes sure it makes nothing later.
    func discard() {
        encoded.withLock { encoded in
            encoded.abandoned = true
            Wipe.bytes(&encoded.bytes)
        }
    }

    private func wait(until deadline: Deadline) -> Bool {
        let (seconds, attoseconds) = deadline.remaining.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + attoseconds / 1_000_000_000
        return done.wait(timeout: .now() + .nanoseconds(Int(clamping: nanoseconds))) == .success
    }
}
