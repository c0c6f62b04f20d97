public import FoundationEssentials

/// Everything that can go wrong with a ``SecureDictionary``, matchable by case; what to do
/// about each: <doc:ErrorHandling>.
///
/// ```swift
/// do {
///     let settings = try SecureDictionary(name: "settings")
///     try settings.setValue("s3cr3t", forKey: "apiToken")
/// } catch SecureDictionaryError.locked {
///     // ask the user to unlock their keyring, then try again
/// } catch {
///     logger.error("keyring: \(error)")   // safe: never contains keys or values
/// }
/// ```
///
/// No case ever carries a key, a value or secret bytes: every message is safe to log, and
/// `localizedDescription` says what happened and what to do.
///
/// **Adding cases.** New cases may come in any release before 1.0, and in minor releases
/// after it; each is listed in the CHANGELOG. End a `catch` list or a `switch` over this type
/// with a general case. Cases are removed or renamed only in a major release (before 1.0: in
/// any release, listed in the CHANGELOG).
public enum SecureDictionaryError: Error, Sendable, Equatable {
    /// No Secret Service could be reached: no D-Bus session bus, no provider on it, or a
    /// provider that refused an encrypted session.
    case serviceUnavailable(reason: String)
    /// The Secret Service has no collection under `alias` (KWallet and KeePassXC have no `session`).
    case noSuchCollection(alias: String)
    /// A sandbox (Flatpak, snap) keeps the Secret Service out of reach; `advice` names the permission.
    case sandboxed(advice: String)
    /// The collection or the item is locked: never "empty", and no dialog unless
    /// ``SecureDictionary/Options/unlock`` allows one (<doc:UnlockingTheKeyring>).
    case locked
    /// The keyring did not answer by the deadline (``SecureDictionary/Options/timeout``). A
    /// write's outcome is then unknown: the dictionary reloads before its next use.
    case timedOut
    /// The daemon died or restarted during the call; a write is as after ``timedOut``. The
    /// next call reconnects by itself.
    case connectionLost
    /// The operation was cancelled before it finished.
    case cancelled
    /// The stored item is not a SecureDictionary blob that this version can read. Nothing is
    /// written over it; remove it explicitly with ``SecureDictionary/delete(name:applicationID:options:)``.
    case corrupt(reason: String)
    /// The stored item is a binary property list of a version other than `bplist00`.
    case unsupportedFormatVersion(String)
    /// The encoded dictionary (or a stored blob) is larger than
    /// ``SecureDictionary/Options/maximumSize``. Nothing was written.
    case tooLarge(size: Int, limit: Int)
    /// A value cannot be stored, e.g. because it is nested too deeply. Nothing was written.
    case invalidValue(reason: String)
    /// A stored value is not of the type a typed key (``SecureDictionary/Key``) or a
    /// `Codable` type expects. Only type names are given, never the key or the value.
    case typeMismatch(expected: String, found: String)
    /// A dictionary name or application ID is empty, too long or holds control characters.
    case invalidName(reason: String)
    /// Several keyring items match this dictionary: remove the extra ones (`secret-tool clear`).
    case ambiguous(count: Int)
    /// Another process held this dictionary's writer lock until the deadline (writing very
    /// slowly, stopped or hung); `pid` and `command` name it when the bus tells. Nothing was written.
    case lockHeld(pid: Int?, command: String?)
    /// The keyring (KeePassXC) wants its user to confirm this access or change, and nobody
    /// did: no dialog was allowed (``SecureDictionary/Options/unlock``), or nobody answered it
    /// in time (<doc:UnlockingTheKeyring>). A write's outcome is unknown, as after ``timedOut``.
    case confirmationRequired
    /// The keyring asked its user to confirm this access, write or removal and the user
    /// declined. Nothing was changed.
    case confirmationDenied
    /// The user cancelled the unlock dialog that ``SecureDictionary/Options/unlock`` allowed.
    /// Nothing was read or written.
    case unlockDismissed
    /// The encrypted session failed on every try, each with a new session: refused, or secrets
    /// it could not decrypt (KWallet before KDE Frameworks 6.25, about once in a hundred).
    case sessionRejected(reason: String)
    /// A write on a session not yet proven did not read back as written on every try (the
    /// provider mangles secrets), or the read-back failed and the previous content could not
    /// be put back; the write is not acknowledged. `restored`: the previous content (or its
    /// absence) was put back and read back exactly; when `false`, the item may hold this write
    /// or damaged bytes. Either way the dictionary reloads before its next use.
    case writeNotVerified(restored: Bool)
    /// ``SecureDictionary/move(name:applicationID:collection:from:to:timeout:)`` found the dictionary
    /// in the destination already, with other content: nothing was moved or removed.
    case alreadyExists(name: String)
    /// `move` found the source changed after each of its copies (another tool writes it
    /// without the writer lock): the source and the copy are both kept. Move again later.
    case sourceChanged(name: String)
    /// `move` was given one store (or two stores of one keyring or folder) as source and
    /// destination: removing the source would remove the only copy. Nothing was moved.
    case sameStore(name: String)
    /// A store's own failure (`FileStoreError`, `AdoptionError`, or your store's), matched as
    /// ``KeyringStoreError`` shows.
    case store(any KeyringStoreError)
    /// Any other error reported by the keyring (a GLib `GError`): its domain, code and message.
    case keyring(domain: String, code: Int, message: String)
}

extension SecureDictionaryError {
    /// Equal cases with equal payloads; two ``store(_:)`` errors are equal when their errors
    /// are of one type and equal.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.store(let left), .store(let right)): left.isEqual(to: right)
        case (.serviceUnavailable(let left), .serviceUnavailable(let right)): left == right
        case (.noSuchCollection(let left), .noSuchCollection(let right)): left == right
        case (.sandboxed(let left), .sandboxed(let right)): left == right
        case (.locked, .locked), (.timedOut, .timedOut), (.connectionLost, .connectionLost), (.cancelled, .cancelled),
            (.confirmationRequired, .confirmationRequired), (.confirmationDenied, .confirmationDenied),
            (.unlockDismissed, .unlockDismissed):
            true
        case (.corrupt(let left), .corrupt(let right)): left == right
        case (.unsupportedFormatVersion(let left), .unsupportedFormatVersion(let right)): left == right
        case (.tooLarge(let size, let limit), .tooLarge(let otherSize, let otherLimit)): size == otherSize && limit == otherLimit
        case (.invalidValue(let left), .invalidValue(let right)): left == right
        case (.typeMismatch(let expected, let found), .typeMismatch(let otherExpected, let otherFound)):
            expected == otherExpected && found == otherFound
        case (.invalidName(let left), .invalidName(let right)): left == right
        case (.ambiguous(let left), .ambiguous(let right)): left == right
        case (.lockHeld(let pid, let command), .lockHeld(let otherPID, let otherCommand)):
            pid == otherPID && command == otherCommand
        case (.sessionRejected(let left), .sessionRejected(let right)): left == right
        case (.writeNotVerified(let left), .writeNotVerified(let right)): left == right
        case (.alreadyExists(let left), .alreadyExists(let right)): left == right
        case (.sourceChanged(let left), .sourceChanged(let right)): left == right
        case (.sameStore(let left), .sameStore(let right)): left == right
        case (.keyring(let domain, let code, let message), .keyring(let otherDomain, let otherCode, let otherMessage)):
            domain == otherDomain && code == otherCode && message == otherMessage
        default: false
        }
    }

    /// Whether a write that failed with this error may nonetheless have reached the keyring.
    var leavesWriteOutcomeUnknown: Bool {
        switch self {
        case .timedOut, .connectionLost, .cancelled, .confirmationRequired, .writeNotVerified: true
        default: false
        }
    }
}

extension SecureDictionaryError: LocalizedError {
    /// The same text as ``description``: what happened and what to do, never a key or value.
    public var errorDescription: String? { description }
}
