import Dispatch
import Synchronization

/// A pure change applied to the cached entries, whose blob is encoded on another thread while
/// the caller checks the stored item (``ItemState`` rule 7).
///
/// ```swift
/// let speculation = SpeculativeWrite(entries: changed, result: old, basedOn: digest, limits: limits)
/// let check = try lockedCheck(limits, deadline)
/// if let blob = speculation.outcome(ifStoredIs: check.digest) { … }  // else: start over
/// ```
///
/// The blob is made inside the result lock and taken out of it, so the caller ends up with
/// the only reference to its storage and its wipe reaches the bytes themselves.
final class SpeculativeWrite<Result>: Sendable {
    /// Below this many entries, encoding takes less than handing it to another thread
    /// (about 10 µs here; 100 entries encode in about 15 µs).
    static var minimumEntries: Int { 100 }

    let entries: [String: PropertyListValue]
    /// What the change returned; handed back only to the thread that made it.
    nonisolated(unsafe) let result: Result
    private let basis: StoredDigest
    private let blob = Mutex<Swift.Result<[UInt8], SecureDictionaryError>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(entries: [String: PropertyListValue], result: Result, basedOn digest: StoredDigest, limits: PropertyListLimits) {
        self.entries = entries
        self.result = result
        basis = digest
        DispatchQueue.global(qos: .userInitiated).async { [self] in
            blob.withLock { blob in
                blob = Swift.Result { () throws(SecureDictionaryError) in
                    try BinaryPropertyList.blob(of: entries, limits: limits)
                }
            }
            done.signal()
        }
    }

    /// The encoded blob (or the encoder's error) when the stored item is still the one the
    /// change was applied to; else `nil`, with the blob wiped.
    func outcome(ifStoredIs digest: StoredDigest) -> Swift.Result<[UInt8], SecureDictionaryError>? {
        guard digest == basis else {
            discard()
            return nil
        }
        return take()
    }

    /// Waits for the encoder and wipes what it made.
    func discard() {
        if case .success(var bytes) = take() { Wipe.bytes(&bytes) }
    }

    private func take() -> Swift.Result<[UInt8], SecureDictionaryError>? {
        done.wait()  // bounded: encoding is CPU work on a dictionary under the size limits
        return blob.withLock { blob in
            defer { blob = nil }
            return blob
        }
    }
}
