import CFileStoreShim
import Dispatch
import ProcessSpawning
import SecureDictionary
import Synchronization

/// The scrypt parameters of a passphrase store's files (stored in each file's header) and
/// the derivation itself.
///
/// ```swift
/// let parameters = try ScryptParameters(log2N: 17, r: 8, p: 1, salt: salt)
/// let master = try parameters.derive(passphrase)      // about 128 MiB and 0.3 s
/// ```
///
/// Why scrypt: it is memory-hard (a guess costs 128·r·N bytes of memory, not just time, so
/// GPUs and ASICs gain little), and BoringSSL, which swift-crypto links in, has it
/// (`sd_scrypt`: the key goes straight into wiped memory).
struct ScryptParameters: Sendable, Hashable {
    static let saltSize = 16
    /// The most memory (1 GiB) and work (memory × p) a file's parameters may ask for, so
    /// that a planted file cannot make a read take minutes.
    static let memoryLimit = 1 << 30
    static let workLimit = 1 << 32

    let log2N: UInt8
    let r: UInt8
    let p: UInt8
    let salt: [UInt8]

    /// - Throws: `SecureDictionaryError.corrupt(reason:)` for parameters out of bounds
    ///   (they come from a file, which is hostile input).
    init(log2N: UInt8, r: UInt8, p: UInt8, salt: [UInt8]) throws(SecureDictionaryError) {
        (self.log2N, self.r, self.p, self.salt) = (log2N, r, p, salt)
        guard (1...24).contains(log2N), r >= 1, p >= 1, salt.count == Self.saltSize, work / Int(p) <= Self.memoryLimit,
            work <= Self.workLimit
        else { throw .corrupt(reason: "the passphrase's scrypt parameters are out of bounds") }
    }

    static func random(log2N: Int, r: Int, p: Int) throws(SecureDictionaryError) -> ScryptParameters {
        var generator = SystemRandomNumberGenerator()
        let salt = (0..<saltSize).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        guard let log2N = UInt8(exactly: log2N), let r = UInt8(exactly: r), let p = UInt8(exactly: p) else {
            throw .invalidValue(reason: "scrypt cost out of bounds")
        }
        return try ScryptParameters(log2N: log2N, r: r, p: p, salt: salt)
    }

    /// What a stretch costs: its memory (128 × r × N bytes) times p, the times it is filled.
    var work: Int { 128 * Int(r) * (1 << Int(log2N)) * Int(p) }

    /// `derive(_:)` on a thread of its own, waited for until `deadline`: past it the call
    /// throws `SecureDictionaryError.timedOut`, and the stretch (BoringSSL cannot interrupt
    /// it) goes on to its end, where `late` receives its key for the next call.
    func derive(
        _ passphrase: SecretBytes, until deadline: Deadline, late: @escaping @Sendable (SecretBytes) -> Void
    ) throws(SecureDictionaryError) -> SecretBytes {
        // The stretch's result, or the caller's giving up: whichever comes first.
        let stretch = OneShot<Stretched>()
        let parameters = self
        DispatchQueue.global(qos: .userInitiated).async {
            let result: Result<SecretBytes, SecureDictionaryError>
            do throws(SecureDictionaryError) { result = .success(try parameters.derive(passphrase)) } catch {
                result = .failure(error)
            }
            if !stretch.finish(.done(result)), case .success(let secret) = result { late(secret) }
        }
        let ended = stretch.wait(until: deadline.dispatchTime) ?? (stretch.finish(.abandoned) ? .abandoned : stretch.wait())
        guard case .done(let result) = ended else { throw .timedOut }
        return try result.get()
    }

    private enum Stretched: Sendable {
        case done(Result<SecretBytes, SecureDictionaryError>)
        case abandoned
    }

    /// The 32-byte master secret for `passphrase`.
    func derive(_ passphrase: SecretBytes) throws(SecureDictionaryError) -> SecretBytes {
        var done = false
        let key = SecretBytes(count: 32) { key in  // derived straight into locked pages
            done = passphrase.withUnsafeBytes { password in
                Self.scrypt(password, salt: salt, log2N: Int(log2N), r: Int(r), p: Int(p), into: key)
            }
        }
        guard done else {
            throw .keyring(domain: "SecureDictionary.Scrypt", code: 1, message: "scrypt failed (out of memory?)")
        }
        return key
    }

    /// scrypt of `password` and `salt` into `key` (its whole length); `false` on failure.
    static func scrypt(
        _ password: UnsafeRawBufferPointer, salt: [UInt8], log2N: Int, r: Int, p: Int, into key: UnsafeMutableRawBufferPointer
    ) -> Bool {
        let blocks = (1 << log2N) + p + 1
        return sd_scrypt(
            password.baseAddress?.assumingMemoryBound(to: UInt8.self), password.count, salt, salt.count, UInt32(log2N),
            UInt32(r), UInt32(p), 128 * r * blocks + 4096, key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count) == 1
    }
}
