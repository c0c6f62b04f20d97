import CSecretShim

/// Every way SecureDictionary treats one Secret Service provider differently from another, in
/// one table (its messages' ``Advice`` and the tool's ``Tool`` included): the code reads these
/// fields and never asks which provider answers. Adding a provider is adding a row.
///
/// | provider | `replacesSecretInPlace` | `readsSecretWithSearch` | `lockedItemsMeanConfirmation` | `dismissesPrompts` | `unlockDialogBusName` | `sessionKeysMayDiffer` |
/// | --- | --- | --- | --- | --- | --- | --- |
/// | gnome-keyring | no | yes | no | no | GNOME's system prompter | no |
/// | KWallet | no | yes | no | yes | — | yes |
/// | KeePassXC | yes | no | yes | yes | — | no |
/// | any other | no | yes | no | no | — | yes |
///
/// Every provider, not known before the transport session is open, gets: a rejected session
/// offered again (``LibSecretConnection/sessionAttempts``) and a session's first write read back
/// (``VerifiedWrite``). KWallet before KDE Frameworks 6.25 rejects about one session in 200 and,
/// more rarely, derives another key than the client (``sessionKeysMayDiffer``). A field a row
/// leaves out takes the value of "any other" provider, as careful as the most careful row.
package struct ProviderTraits: Sendable, Equatable {
    /// How `secure-dict doctor` names it (`nil`: not told apart).
    package let name: String?
    /// An existing item's secret is replaced with `Item.SetSecret`, not `CreateItem` with
    /// replace: KeePassXC 2.7.4 asks its user before `CreateItem` replaces an item (fixed in
    /// 2.7.6), never before `SetSecret`.
    var replacesSecretInPlace = false
    /// The check asks for the secret at the item's last path right behind the search, in one
    /// round trip (`sd_search_reading_one`). Not on KeePassXC, where reading an item this
    /// client may not yet read asks its user.
    var readsSecretWithSearch = true
    /// Items reported locked in an unlocked collection mean that the provider wants its user
    /// to confirm this client's access (KeePassXC's "Confirm when passwords are retrieved by
    /// clients"): ``SecureDictionaryError/confirmationRequired``, not `locked`.
    package var lockedItemsMeanConfirmation = false
    /// A prompt the caller stops waiting for is dismissed (`Prompt.Dismiss`). Not on
    /// gnome-keyring: its daemon (42.1) aborts when a shown unlock prompt is dismissed
    /// (`gkd-secret-unlock.c`, unchanged upstream); nor on a provider not told apart.
    var dismissesPrompts = false
    /// The bus name of the process that shows the provider's unlock dialog, where another one
    /// does: gnome-keyring asks GNOME's system prompter (GNOME Shell, or an activated
    /// `gcr-prompter`), and without one completes every unlock prompt as dismissed at once
    /// (56 ms), as if the user had cancelled. `nil`: the provider shows it.
    var unlockDialogBusName: String?
    /// Well-known bus names the provider's connection owns beside the Secret Service's, which
    /// tell which provider answers (``LibSecretConnection/provider(_:)``) even where `/proc`
    /// shows nothing, as in a sandbox.
    var busNames: [String] = []
    /// The provider may derive another session key than the client and still send a secret
    /// that passes the padding check (KWallet before KDE Frameworks 6.25: 1 lookup in 3,000 on
    /// 6.13), so an unproven session's read that is no property list is read again on a new
    /// one (``LibSecretClient/load(_:timeout:)``). Elsewhere it is a damaged item at once: a
    /// hostile 4 MiB blob read three times took 197 ms against the 100 ms the reliability suite allows.
    var sessionKeysMayDiffer = true
    /// What the user is told to do about it, in ``SecureDictionaryError``'s messages.
    let advice: Advice
    /// What `secure-dict` does differently for it.
    package var tool = Tool()

    /// A provider's part of the error messages (the rest of each message is the same for all).
    struct Advice: Sendable, Equatable {
        /// What is locked, as a message names it; `nil`: "keyring", with the provider's name.
        var lockedThing: String?
        /// How to unlock it where the program runs on a desktop that can show a dialog.
        let unlockOnDesktop: String
        /// How to unlock it elsewhere (a shell, SSH, a service, no dialog).
        let unlockElsewhere: String
        /// Which update to install when its encrypted sessions keep failing.
        var sessionUpdate: String?
        /// Why an access needed confirmation and how to stop that; `nil`: the general sentence.
        var confirmation: String?
    }

    /// gnome-keyring's unlock command, for a shell with no unlock dialog.
    private static let gnomeKeyringUnlock =
        "unlock it with 'gnome-keyring-daemon --replace --unlock --components=secrets' (password on stdin)"
    /// KDE Frameworks 6.25 fixed KWallet's session keys (``sessionKeysMayDiffer``).
    private static let kwalletUpdate = "KWallet: KDE Frameworks 6.25 or later"

    static let gnomeKeyring = ProviderTraits(
        name: "gnome-keyring", unlockDialogBusName: "org.gnome.keyring.SystemPrompter", busNames: ["org.gnome.keyring"],
        sessionKeysMayDiffer: false,
        advice: Advice(
            unlockOnDesktop: "unlock the login keyring in Passwords and Keys (seahorse)", unlockElsewhere: gnomeKeyringUnlock),
        tool: Tool(
            executables: ["gnome-keyring-daemon"], version: .versionOption, startsInKeyringRun: true,
            dataFolder: "keyrings"))
    static let kwallet = ProviderTraits(
        name: "KWallet", dismissesPrompts: true, busNames: ["org.kde.kwalletd5", "org.kde.kwalletd6"],
        advice: Advice(
            lockedThing: "KWallet wallet", unlockOnDesktop: kwalletUnlock, unlockElsewhere: kwalletUnlock,
            sessionUpdate: kwalletUpdate),
        tool: Tool(
            executables: ["kwalletd5", "kwalletd6", "ksecretd"], version: .kdeFrameworksLibrary,
            unlockFix: "open the wallet in KWalletManager; right after a KDE login KWallet reports locked until some "
                + "application has opened it",
            sessionFix: Tool.SessionFix(
                version: "6.25",
                detail: "KWallet before KDE Frameworks 6.25 mishandles about 1 encrypted session in 100; "
                    + "SecureDictionary opens a new session and reads back the first write of each",
                fix: "update KDE Frameworks to 6.25 or later"),
            dataFolder: "kwalletd"))
    static let keepassxc = ProviderTraits(
        name: "KeePassXC", replacesSecretInPlace: true, readsSecretWithSearch: false, lockedItemsMeanConfirmation: true,
        dismissesPrompts: true, busNames: ["org.keepassxc.KeePassXC.MainWindow"], sessionKeysMayDiffer: false,
        advice: Advice(
            lockedThing: "KeePassXC database", unlockOnDesktop: "unlock it in the KeePassXC window",
            unlockElsewhere: "unlock it in the KeePassXC window",
            confirmation: "KeePassXC wants this access confirmed and it was not: it asks only when the program opts in "
                + "to dialogs; or turn off its 'Confirm when passwords are retrieved by clients'"),
        tool: Tool(
            executables: ["keepassxc"], version: .versionOption, unlockFix: "unlock the database in KeePassXC's window",
            note: "KeePassXC: the 'default' alias follows the active database tab, and deleted "
                + "dictionaries go to the database's Recycle Bin when it has one",
            deletesIntoRecycleBin: true,
            confirmationFix: "in KeePassXC, Settings, Secret Service Integration, turn off 'Confirm when passwords are "
                + "retrieved by clients'"))
    /// A provider not told apart.
    static let other = ProviderTraits(
        name: nil,
        advice: Advice(
            unlockOnDesktop: "unlock it in your keyring manager", unlockElsewhere: gnomeKeyringUnlock,
            sessionUpdate: kwalletUpdate))
    /// ``InMemoryKeyringStore``, which is no provider on a bus: only its advice is ever read.
    static let inMemory = ProviderTraits(
        name: InMemoryKeyringStore.providerName, sessionKeysMayDiffer: false,
        advice: Advice(lockedThing: "InMemoryKeyringStore", unlockOnDesktop: inMemoryUnlock, unlockElsewhere: inMemoryUnlock))

    private static let kwalletUnlock =
        "open it in KWalletManager (after login it stays locked until an application opens it)"
    private static let inMemoryUnlock = "call setLocked(false) on it (setLocked or an injected failure locked it)"

    private static let rows = [gnomeKeyring, kwallet, keepassxc, inMemory]

    /// The rows of the real providers, for `doctor --find`'s list of what is installed.
    package static var providers: [ProviderTraits] { [gnomeKeyring, kwallet, keepassxc] }

    /// The row of the provider named `name` (``ErrorContext/provider``,
    /// `SecretServiceDiagnosis.providerName`); ``other`` when it was not told apart.
    package static func named(_ name: String?) -> ProviderTraits {
        rows.first { $0.name == name && name != nil } ?? other
    }

    /// The row of the provider whose process runs `executable` (the last component of
    /// `/proc/PID/exe`); `nil` when none is known to.
    package static func running(executable: String) -> ProviderTraits? {
        rows.first { $0.tool.executables.contains(executable) }
    }
}

extension ProviderTraits {
    /// What `secure-dict`'s `doctor` and `keyring run` do differently per provider.
    ///
    /// ```swift
    /// let tool = ProviderTraits.named(diagnosis.providerName).tool
    /// let fix = tool.unlockFix ?? daemonFolders.unlockCommand(from: environment)
    /// ```
    package struct Tool: Sendable, Equatable {
        /// How `doctor` learns the running provider's version.
        package enum VersionSource: Sendable, Equatable {
            /// It is not told.
            case unknown
            /// The executable prints it with `--version` and exits at once.
            case versionOption
            /// The KDE Frameworks version of the wallet library the process has loaded
            /// (`/proc/PID/maps`).
            case kdeFrameworksLibrary
        }

        /// A provider release that fixed its encrypted sessions (``sessionKeysMayDiffer``),
        /// and what `doctor` says of an older one.
        package struct SessionFix: Sendable, Equatable {
            /// The first release with the fix, `major.minor`, compared with the last word of the
            /// version `doctor` read.
            package let version: String
            package let detail: String
            package let fix: String
        }

        /// The names of the provider's executables, as `/proc/PID/exe` ends.
        package var executables: [String] = []
        package var version = VersionSource.unknown
        /// What `doctor` tells its user to do about a locked collection. `nil`: the desktop's
        /// keyring manager, or gnome-keyring-daemon's own command with the folders the running
        /// daemon keeps its keyring in (read from `/proc`).
        package var unlockFix: String?
        /// What `doctor` always notes about the provider.
        package var note: String?
        /// What `doctor` says when the provider's version predates its session fix, or is not told.
        package var sessionFix: SessionFix?
        /// A deleted item goes to a recycle bin, which `doctor`'s scratch dictionary, written
        /// and deleted at each run, would fill: the scratch dictionary is kept instead.
        package var deletesIntoRecycleBin = false
        /// How to stop the confirmations behind ``ProviderTraits/lockedItemsMeanConfirmation``,
        /// as `doctor` advises.
        package var confirmationFix: String?
        /// `secure-dict keyring run --provider` can start it.
        package var startsInKeyringRun = false
        /// Where it keeps its stored items, under `$XDG_DATA_HOME` (`nil`: wherever its user
        /// chose, as KeePassXC's databases): `doctor --find` names the folder of a provider that
        /// does not run, whose copies cannot be asked for.
        package var dataFolder: String?
    }
}
