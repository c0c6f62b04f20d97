#if canImport(FoundationEssentials)
    public import FoundationEssentials
#else
    public import Foundation
#endif

/// Everything that can go wrong with a ``SecureDictionary``, matchable by case.
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
/// after it, as new failures become known; each is listed in the CHANGELOG. Always end a
/// `catch` list or a `switch` over this type with a general case. Cases are removed or
/// renamed only in a major release (before 1.0: in any release, listed in the CHANGELOG).
public enum SecureDictionaryError: Error, Sendable, Equatable {
    /// No Secret Service could be reached: no D-Bus session bus, no provider on it, or a
    /// provider that refused an encrypted session.
    case serviceUnavailable(reason: String)
    /// The Secret Service runs but has no collection under `alias`. KWallet and KeePassXC,
    /// for instance, offer `default` but not gnome-keyring's `session`.
    case noSuchCollection(alias: String)
    /// The process runs in an application sandbox (Flatpak, snap) from which no Secret
    /// Service can be reached; `advice` says which permission to grant.
    case sandboxed(advice: String)
    /// The collection or the item is locked. SecureDictionary never treats this as "empty",
    /// and shows no unlock dialog unless ``SecureDictionary/Options/unlock`` allows it (then
    /// this means nobody unlocked it in time).
    case locked
    /// The keyring did not answer within the deadline
    /// (``SecureDictionary/Options/timeout``). When this interrupted a write, its outcome is
    /// unknown: the dictionary reloads before its next use.
    case timedOut
    /// The connection to the keyring broke during a call (the daemon died or restarted). A
    /// write it interrupted is as after ``timedOut``. The next call reconnects by itself.
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
    /// Several keyring items match this dictionary; SecureDictionary will not guess which
    /// one is right. Remove the extra ones (e.g. with `secret-tool clear`).
    case ambiguous(count: Int)
    /// Another process held this dictionary's writer lock until the deadline
    /// (``SecureDictionary/Options/timeout``): it is writing very slowly, or it is stopped or
    /// hung while writing. `pid` and `command` name it when the bus tells (`nil` otherwise).
    /// Nothing was written.
    case lockHeld(pid: Int?, command: String?)
    /// The keyring wants its user to confirm this access or change. KeePassXC asks before an
    /// application reads an item the first time ("Confirm when passwords are retrieved by
    /// clients", on by default): SecureDictionary opens no such dialog and fails at once,
    /// unless ``SecureDictionary/Options/unlock`` allows dialogs; then nobody answered
    /// KeePassXC's access dialog by the policy's timeout. With its other confirmations on,
    /// KeePassXC asks before some writes and removals: nobody answered by the deadline
    /// (``SecureDictionary/Options/timeout``) and the request was withdrawn. The outcome is
    /// unknown, as after ``timedOut``.
    case confirmationRequired
    /// The keyring asked its user to confirm this access, write or removal and the request
    /// was declined (the user pressed Deny or Cancel). Nothing was changed.
    case confirmationDenied
    /// The keyring's unlock dialog, shown because ``SecureDictionary/Options/unlock`` allows
    /// it, was cancelled by the user. Nothing was read or written.
    case unlockDismissed
    /// The Secret Service runs, but the encrypted session it negotiated failed on every try:
    /// it refused the session, or sent secrets the session could not decrypt. KWallet before
    /// KDE Frameworks 6.25 does either about once in a hundred sessions, and SecureDictionary
    /// tries a new session each time; failing every time points at the provider.
    case sessionRejected(reason: String)
    /// A write on a session not yet proven could not be confirmed by reading it back: the
    /// keyring held other bytes than those written on every try with a new session (the
    /// provider mangles secrets), or the read-back itself failed and the previous content
    /// could not be put back. The write is not acknowledged.
    /// `restored`: what the item held before (or its absence) was put back and read back
    /// exactly; when `false`, the item may hold this write or damaged bytes (the next load
    /// may throw ``corrupt(reason:)``). Either way the dictionary reloads before its next use.
    case writeNotVerified(restored: Bool)
    /// ``SecureDictionary/move(name:applicationID:collection:from:to:timeout:)`` found the dictionary
    /// in the destination already, with other content: nothing was moved or removed.
    case alreadyExists(name: String)
    /// ``SecureDictionary/move(name:applicationID:collection:from:to:timeout:)`` found the source
    /// changed after each of its copies (another tool kept writing it without the writer lock):
    /// the source and the copy are both kept. Move again later.
    case sourceChanged(name: String)
    /// ``SecureDictionary/move(name:applicationID:collection:from:to:timeout:)`` was given one
    /// store as both source and destination (the same instance, or two stores of the same
    /// keyring or folder): removing the source would remove the only copy. Nothing was moved.
    case sameStore(name: String)
    /// A store's own failure: one of an encrypted-file store (`FileStoreError`, in
    /// SecureDictionaryFileStore), of adoption (`AdoptionError`, in SecureDictionaryAdoption)
    /// or of a store of yours. Match it as ``KeyringStoreError`` shows.
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
