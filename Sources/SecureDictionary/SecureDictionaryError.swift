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
    /// The connection to the keyring broke during a call (the daemon died or restarted).
    /// When this interrupted a write, its outcome is unknown: the dictionary reloads before
    /// its next use. The next call reconnects by itself.
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
    /// clients", on by default): SecureDictionary opens no such dialog and fails at once.
    /// With its other confirmations on, KeePassXC asks before some writes and removals:
    /// nobody answered by the deadline (``SecureDictionary/Options/timeout``) and the request
    /// was withdrawn. Treat the outcome as unknown, as after ``timedOut``: the dictionary
    /// reloads before its next use.
    case confirmationRequired
    /// The keyring asked its user to confirm this write or removal and the request was
    /// declined (the user pressed Deny or Cancel). Nothing was changed.
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
    /// The Secret portal cannot give this app its master secret (`SecretPortalStore`, in SecureDictionaryFileStore): it
    /// is missing, has no Secret backend, or this process is not a sandboxed app. Nothing
    /// was read or written.
    case portalUnavailable(reason: String)
    /// A file of `SecretPortalStore` (SecureDictionaryFileStore) cannot be read or written (a full disk, a read-only
    /// or missing folder). A write that fails with it left the previous file in place.
    case fileUnavailable(path: String, reason: String)
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
    /// An encrypted-file store (SecureDictionaryFileStore) refuses a folder or file that
    /// someone else could swap or read: a symbolic link, a folder of another user, or one
    /// that others may write to. `reason` says which, and the fix. Nothing was read or written.
    case unsafePath(path: String, reason: String)
    /// The passphrase given to an encrypted-file store is not the one its files were written
    /// with. Nothing was read or written, and the passphrase was not kept.
    case wrongPassphrase
    /// An encrypted-file store's file was written under another key than the store's
    /// (`source`: another systemd credential, another app's portal secret, or another kind of
    /// key). Nothing was read or written.
    case wrongKey(source: String)
    /// The systemd credential `name` that holds an encrypted-file store's key is missing or
    /// unusable: `reason` says why, and the fix (the unit's line for a missing one, the
    /// command that makes a new one for one of the wrong size). Nothing was read or written.
    case credentialUnavailable(name: String, reason: String)
    /// An encrypted-file store needs its passphrase and none could be read (`reason`: no
    /// terminal, an empty or closed descriptor, nobody typed it in time). Nothing was read or
    /// written.
    case passphraseUnavailable(reason: String)
    /// An encrypted file is older than a version this login session (or this process) already
    /// read or wrote: an old copy was put back. Nothing was read or written over it.
    case rolledBack(path: String)
    /// The automatic store choice (`AutomaticStore`, SecureDictionaryFileStore) found no
    /// Secret Service (`reason`), no sandbox for the Secret portal, and no encrypted-file
    /// store configured. Nothing was read or written.
    case noStoreAvailable(reason: String)
    /// `SecureDictionary.adopt(…)` or `SecureDictionary.exportItems(…)` (SecureDictionaryAdoption) was given a store that
    /// keeps no per-key items of other libraries (those live in the keyring): pass
    /// `SecretServiceStore`, the default. Nothing was read or written.
    case storeHoldsNoItems(operation: String)
    /// Any other error reported by the keyring (a GLib `GError`): its domain, code and message.
    case keyring(domain: String, code: Int, message: String)
}

extension SecureDictionaryError {
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
