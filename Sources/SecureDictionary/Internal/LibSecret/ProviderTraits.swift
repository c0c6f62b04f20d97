import CSecretShim

/// Every way SecureDictionary treats one Secret Service provider differently from another, in
/// one table: the code reads these fields and never asks which provider answers. Adding a
/// provider is adding a row (and a case in `sd_service_provider`, which recognises it).
///
/// | provider | `replacesSecretInPlace` | `readsSecretWithSearch` | `lockedItemsMeanConfirmation` | `dismissesPrompts` | `unlockDialogBusName` | `sessionKeysMayDiffer` |
/// | --- | --- | --- | --- | --- | --- | --- |
/// | gnome-keyring | no | yes | no | no | GNOME's system prompter | no |
/// | KWallet | no | yes | no | yes | — | yes |
/// | KeePassXC | yes | no | yes | yes | — | no |
/// | any other | no | yes | no | no | — | yes |
///
/// Not in the table because every provider gets them (the provider is not known before the
/// transport session is open): a session the provider rejects is offered again, up to
/// ``LibSecretConnection/sessionAttempts`` times, and the first write of a session is read
/// back before later writes are trusted (``VerifiedWrite``). KWallet before KDE Frameworks
/// 6.25 rejects about one session in 200 and, more rarely, derives another key than the
/// client, so that it stores garbage or reads it (``sessionKeysMayDiffer``).
struct ProviderTraits: Sendable, Equatable {
    /// How `secure-dict doctor` names it (`nil`: not told apart).
    let name: String?
    /// An existing item's secret is replaced with `Item.SetSecret`, not `CreateItem` with
    /// replace: KeePassXC 2.7.4 asks its user before `CreateItem` replaces an item (fixed in
    /// 2.7.6), while `SetSecret` needs no confirmation. The path comes from the check before
    /// the write (``LibSecretConnection/remember(itemPath:of:in:)``).
    let replacesSecretInPlace: Bool
    /// The check asks for the secret at the item's last path right behind the search, in one
    /// round trip (`sd_search_reading_one`). Not on KeePassXC, where reading an item this
    /// client may not yet read asks its user.
    let readsSecretWithSearch: Bool
    /// Items reported locked in an unlocked collection mean that the provider wants its user
    /// to confirm this client's access (KeePassXC's "Confirm when passwords are retrieved by
    /// clients"), which is ``SecureDictionaryError/confirmationRequired``, not `locked`; where
    /// the caller opted in to dialogs, `Service.Unlock` of those items shows the provider's
    /// access dialog (``LibSecretClient/confirmAccessInteractively(to:timeout:)``).
    let lockedItemsMeanConfirmation: Bool
    /// A prompt the caller stops waiting for is dismissed (`Prompt.Dismiss`). Not on
    /// gnome-keyring: its daemon (42.1) aborts when a shown unlock prompt is dismissed
    /// (`gkd-secret-unlock.c`, unchanged upstream); nor on a provider not told apart.
    let dismissesPrompts: Bool
    /// The bus name of the process that shows the provider's unlock dialog, where it is one of
    /// its own: gnome-keyring asks GNOME's system prompter (GNOME Shell, or a D-Bus activated
    /// `gcr-prompter`), and without one on the bus it completes every unlock prompt as
    /// dismissed at once (56 ms), as if the user had cancelled. `nil`: the provider shows it.
    let unlockDialogBusName: String?
    /// The provider may derive another session key than the client and still send a secret
    /// that passes the padding check (KWallet before KDE Frameworks 6.25: 1 lookup in 3,000 on
    /// 6.13), so a read on a session not yet proven that is no property list is read again on
    /// a new session (``LibSecretClient/load(_:timeout:)``); assumed of a provider not told
    /// apart. Elsewhere such a read is a damaged item at once: a hostile 4 MiB blob read three
    /// times took 197 ms against the 100 ms the reliability suite allows.
    let sessionKeysMayDiffer: Bool

    static let gnomeKeyring = ProviderTraits(
        name: "gnome-keyring", replacesSecretInPlace: false, readsSecretWithSearch: true,
        lockedItemsMeanConfirmation: false, dismissesPrompts: false,
        unlockDialogBusName: "org.gnome.keyring.SystemPrompter", sessionKeysMayDiffer: false)
    static let kwallet = ProviderTraits(
        name: "KWallet", replacesSecretInPlace: false, readsSecretWithSearch: true,
        lockedItemsMeanConfirmation: false, dismissesPrompts: true, unlockDialogBusName: nil,
        sessionKeysMayDiffer: true)
    static let keepassxc = ProviderTraits(
        name: "KeePassXC", replacesSecretInPlace: true, readsSecretWithSearch: false,
        lockedItemsMeanConfirmation: true, dismissesPrompts: true, unlockDialogBusName: nil,
        sessionKeysMayDiffer: false)
    static let other = ProviderTraits(
        name: nil, replacesSecretInPlace: false, readsSecretWithSearch: true,
        lockedItemsMeanConfirmation: false, dismissesPrompts: false, unlockDialogBusName: nil,
        sessionKeysMayDiffer: true)
}

extension ProviderTraits {
    /// The row of the provider `sd_service_provider` recognised.
    init(code: Int32) {
        switch code {
        case Int32(SD_PROVIDER_KEEPASSXC): self = .keepassxc
        case Int32(SD_PROVIDER_KWALLET): self = .kwallet
        case Int32(SD_PROVIDER_GNOME_KEYRING): self = .gnomeKeyring
        default: self = .other
        }
    }
}
