import Glibc

extension SecureDictionaryError: CustomStringConvertible {
    /// What happened, in one short sentence, then the one fix for this provider and this
    /// environment (desktop, SSH, headless). Never a key or a value.
    public var description: String { description(in: .current) }

    /// ``description`` as it reads in `context` (tests ask for every context).
    package func description(in context: ErrorContext) -> String {
        switch self {
        case .serviceUnavailable(let reason): Self.serviceUnavailable(reason, context)
        case .noSuchCollection(let alias):
            "The keyring has no collection called '\(alias)': use the default collection, or create one under that "
                + "alias in your keyring manager."
        case .sandboxed(let advice): "This sandboxed app cannot reach the keyring: \(advice)."
        case .locked: Self.locked(context)
        case .timedOut: "The keyring did not answer in time: check that its daemon is running and responsive."
        case .connectionLost: "The connection to the keyring was lost during the call; the next call reconnects."
        case .cancelled: "The operation was cancelled."
        case .corrupt(let reason):
            "The stored dictionary is unreadable (\(reason)); nothing was written over it."
        case .unsupportedFormatVersion(let version): "The stored dictionary has an unsupported format version (\(version))."
        case .tooLarge(let size, let limit):
            "The dictionary takes \(size) bytes, more than this instance's limit of \(limit): raise "
                + "Options.maximumSize to read or write it; a write over the limit wrote nothing."
        case .invalidValue(let reason): "A value cannot be stored: \(reason)."
        case .typeMismatch(let expected, let found):
            "A stored value is of the property-list type \(found), which does not convert to the type asked for "
                + "(\(expected)): read it as \(found), or write it again as \(expected)."
        case .invalidName(let reason): "Invalid name: \(reason)."
        case .ambiguous(let count): "\(count) keyring items match this dictionary: remove the extra ones."
        case .lockHeld(let pid?, let command) where pid == Int(getpid()):
            "This process (\(Self.name(pid: pid, command: command))) held this dictionary's writer lock until the "
                + "deadline, refreshing: give the refresh's network call a timeout shorter than lockWait."
        case .lockHeld(let pid, let command):
            "Another process (\(Self.name(pid: pid, command: command))) held this dictionary's writer lock until the "
                + "deadline: check that process, which may be stopped or hung while writing."
        case .confirmationRequired: Self.confirmationRequired(context)
        case .confirmationDenied: "The keyring asked to confirm this change and it was declined; nothing was changed."
        case .unlockDismissed: "The keyring's unlock dialog was cancelled; nothing was read or written."
        case .sessionRejected(let reason):
            "The keyring's encrypted session failed on every try (\(reason)): update the keyring provider"
                + (ProviderTraits.named(context.provider).advice.sessionUpdate.map { " (\($0))." } ?? ".")
        case .writeNotVerified(let restored):
            "The keyring did not read back what was written, "
                + (restored ? "so the previous content was put back" : "and the item may be damaged")
                + ": if this repeats, update or replace the keyring provider ('secure-dict doctor' checks it, if installed)."
        case .alreadyExists(let name):
            "\(name) exists in the destination already, with other content: nothing was moved."
        case .sameStore(let name):
            "\(name) was not moved: the source and the destination are the same store; pass the store to move it to."
        case .sourceChanged(let name):
            "\(name) kept changing while it was moved (another tool writes it): both copies are kept; move it again later."
        case .store(let error): error.description
        case .keyring(let domain, let code, let message): "Keyring error \(domain) \(code): \(message)."
        }
    }

    private static func name(pid: Int?, command: String?) -> String {
        switch (pid, command) {
        case (let pid?, let command?): "pid \(pid), \(command)"
        case (let pid?, nil): "pid \(pid)"
        default: "unknown"
        }
    }

    /// "The THING is locked: FIX.", in the provider's words (its row of ``ProviderTraits``).
    private static func locked(_ context: ErrorContext) -> String {
        let advice = ProviderTraits.named(context.provider).advice
        let thing = advice.lockedThing ?? (context.provider.map { "keyring (\($0))" } ?? "keyring")
        if context.surroundings == .desktop && !context.unlockDialogUnavailable {
            return "The \(thing) is locked: \(advice.unlockOnDesktop)."
        }
        let noDialog = context.unlockDialogUnavailable ? " and no unlock dialog can be shown here" : ""
        return "The \(thing) is locked\(noDialog): \(advice.unlockElsewhere)."
    }

    /// No keyring: the fix is this project's answer where the program runs. On a desktop, the
    /// desktop's keyring; over SSH, the encrypted-file stores; in services, containers and CI,
    /// those stores, or for tests a private keyring (the optional `secure-dict` tool's
    /// `keyring run`). The library never assumes that the tool is installed.
    private static func serviceUnavailable(_ reason: String, _ context: ErrorContext) -> String {
        let what = noKeyring(reason, context)
        switch context.surroundings {
        case .desktop:
            return context.hasSessionBus
                ? "\(what): start your desktop's keyring (gnome-keyring, KWallet, or KeePassXC with Secret Service on)."
                : "\(what): run the program from your desktop session."
        case .ssh:
            return "\(what): keep the dictionary in encrypted files (EncryptedFileStore, in SecureDictionaryFileStore)."
        case .headless:
            return "\(what): use EncryptedFileStore for services and containers; for tests, a private keyring "
                + "('secure-dict keyring run', if installed)."
        }
    }

    /// What happened when no keyring answers, without the fix (the command-line tool gives
    /// its own: `--store` options rather than types).
    package static func noKeyring(_ reason: String, _ context: ErrorContext) -> String {
        context.hasSessionBus
            ? "No usable keyring on the session bus (\(reason.prefix(32)))"
            : context.surroundings == .ssh
                ? "There is no D-Bus session bus in this SSH session" : "There is no D-Bus session bus here"
    }

    private static func confirmationRequired(_ context: ErrorContext) -> String {
        if let confirmation = ProviderTraits.named(context.provider).advice.confirmation { return confirmation + "." }
        let keyring = context.provider.map { "keyring (\($0))" } ?? "keyring"
        return "The \(keyring) wants its user to confirm this access, and it was not confirmed: the keyring "
            + "shows its dialog only when the program opts in to dialogs."
    }
}
