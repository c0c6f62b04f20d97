import Glibc

/// A stored secret: what every ``KeyringStore`` returns from `load` and takes in `store`.
/// Its bytes live in pages of the library's own, locked out of swap and out of core dumps,
/// and are wiped when the last reference goes.
///
/// ```swift
/// final class MyStore: KeyringStore {
///     func load(_ item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) -> SecretBytes? {
///         try myBackend.read(item.name).map { response in SecretBytes(copying: response) }
///     }
///     func store(_ secret: SecretBytes, for item: KeyringItem, timeout: Duration) throws(SecureDictionaryError) {
///         try secret.withUnsafeBytes { bytes in try myBackend.write(item.name, bytes) }
///     }
///     // …
/// }
/// ```
///
/// Read it through ``withUnsafeBytes(_:)`` and keep no copy: the bytes a store is given are
/// a view of the dictionary's own pages, not a copy. A store that keeps a secret keeps the
/// `SecretBytes` (or its own copy, `SecretBytes(copying:)`); it is immutable.
///
/// Why a class and not `[UInt8]`: an array handed to another thread (the keyring's call lane,
/// a result box) shares its storage, so wiping "our" copy wipes a copy-on-write duplicate while
/// the shared original is freed later, unwiped; and arrays live on the heap, which core dumps
/// keep. A class has one storage, wiped once, whoever releases it last.
public final class SecretBytes: @unchecked Sendable {  // immutable once its creator filled it
    private let base: UnsafeRawPointer
    /// What holds the bytes and wipes them when it goes: the `SecureRegion` of a copy, or
    /// what a view was made of (a ``Generation``, a secret libsecret decrypted into its own
    /// locked memory).
    private let owner: any AnyObject & Sendable

    /// The number of bytes.
    public let count: Int

    /// A copy of `bytes` in locked pages of its own. Wipe the source yourself if it was secret.
    ///
    /// ```swift
    /// let secret = SecretBytes(copying: [0x62, 0x70])   // tests; a store copies its backend's buffer
    /// ```
    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { buffer in _ = buffer.initializeMemory(as: UInt8.self, from: bytes) }
    }

    /// `count` bytes in locked pages of their own, written by `initialize` before anyone else
    /// can see them: for a store that decrypts or reads straight into them (no copy elsewhere).
    ///
    /// ```swift
    /// let secret = try SecretBytes(count: length) { buffer in try decrypt(ciphertext, into: buffer) }
    /// ```
    ///
    /// - Throws: what `initialize` throws (the pages are wiped and released).
    public init<E: Error>(count: Int, initializingWith initialize: (UnsafeMutableRawBufferPointer) throws(E) -> Void) throws(E) {
        let region = SecureRegion(byteCount: count)
        try initialize(UnsafeMutableRawBufferPointer(start: region.base, count: count))
        base = UnsafeRawPointer(region.base)
        self.count = count
        owner = region
    }

    /// The bytes `bytes` of `owner`, which this keeps alive and which wipes them (a
    /// ``Generation``, a libsecret secret value): no copy is made.
    init(viewing bytes: UnsafeRawBufferPointer, keptBy owner: any AnyObject & Sendable) {
        base = bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
        count = bytes.count
        self.owner = owner
    }

    /// Calls `body` with the bytes; keep no copy of them, nor the pointer after `body` returns.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withExtendedLifetime(owner) { () throws(E) -> R in try body(UnsafeRawBufferPointer(start: base, count: count)) }
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
}
