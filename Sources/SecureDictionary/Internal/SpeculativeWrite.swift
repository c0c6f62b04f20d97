import Dispatch
import Synchronization

/// A pure change applied to the cached entries, whose blob is encoded on another thread while
/// the caller checks the stored item (``ItemState`` rule 7).
///
/// ```swift
/// let speculation = SpeculativeWrite(entries: changed, result: old, basedOn: digest, limits: limits)
/// let check = try lockedCheck(limits, deadline)
/// var bytes: [UInt8] = []
/// if try speculation.moveBlob(into: &bytes, ifStoredIs: check.digest) { … }  // else: start over
/// ```
///
/// The blob is encoded straight into the storage it is moved out of, and moved by swapping,
/// so no second reference to its bytes ever exists: a wipe of the caller's array (or of the
/// stored one, when the speculation is discarded) reaches the bytes themselves rather than a
/// copy made on write.
final class SpeculativeWrite<Result>: Sendable {
    /// Below this many entries, encoding takes less than handing it to another thread
    /// (about 10 µs here; 100 entries encode in about 15 µs).
    static var minimumEntries: Int { 100 }

    let entries: [String: PropertyListValue]
    /// What the change returned; handed back only to the thread that made the change.
    nonisolated(unsafe) let result: Result
    private let basis: StoredDigest
    private let encoded = Mutex(Encoded())
    private let done = DispatchSemaphore(value: 0)

    private struct Encoded {
        var bytes: [UInt8] = []
        var failure: SecureDictionaryError?
    }

    init(entries: [String: PropertyListValue], result: Result, basedOn digest: StoredDigest, limits: PropertyListLimits) {
        self.entries = entries
        self.result = result
        basis = digest
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            encoded.withLock { encoded in
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
    /// the one the change was applied to; otherwise wipes the blob and returns `false`.
    ///
    /// - Throws: what encoding threw (``SecureDictionaryError/tooLarge(size:limit:)``…), when
    ///   the stored item is still the one the change was applied to.
    func moveBlob(into bytes: inout [UInt8], ifStoredIs digest: StoredDigest) throws(SecureDictionaryError) -> Bool {
        guard digest == basis else {
            discard()
            return false
        }
        done.wait()  // bounded: encoding is CPU work on a dictionary under the size limits
        return try encoded.withLock { encoded throws(SecureDictionaryError) -> Bool in
            if let failure = encoded.failure { throw failure }
            swap(&bytes, &encoded.bytes)
            return true
        }
    }

    /// Waits for the encoder and wipes what it made.
    func discard() {
        done.wait()
        encoded.withLock { Wipe.bytes(&$0.bytes) }
    }
}
