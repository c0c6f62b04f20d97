import CSecretShim

/// Every way SecureDictionary treats one Secret Service provider differently from another, in
/// one table: the code reads these fields and never asks which provider answers. Adding a
/// provider is adding a row (and a case in `sd_service_provider`, which recognises it).
///
/// | provider | `replacesSecretInPlace` | `readsSecretWithSearch` | `lockedItemsMeanConfirmation` | `dismissesPrompts` | `unlockDialogBusName` |
/// | --- | --- | --- | --- | --- | --- |
/// | gnome-keyring | no | yes | no | no | GNOME's system prompter |
/// | KWallet | no | yes | no | yes | — |
/// | KeePassXC | yes | no | yes | yes | — |
/// | any other | no | yes | no | no | — |
///
/// Not in the table because every provider gets them (the provider is not known before the
/// transport session is open): a session the provider rejects is offered again, up to
/// ``LibSecretConnection/sessionAttempts`` times, a read that decrypts to no property list
/// before the session has proven its key is read again on a new one
/// (``LibSecretClient/load(_:timeout:)``), and the first write of a session is read back
/// before later writes are trusted (``VerifiedWrite``). KWallet before KDE Frameworks 6.25
/// rejects about one session in 200 and, more rarely, derives another key than the client,
/// so that it stores garbage or reads it.
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
    /// clients"), which is ``SecureDictionaryError/confirmationRequired``, not `locked`.
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

    static let gnomeKeyring = ProviderTraits(
        name: "gnome-keyring", replacesSecretInPlace: false, readsSecretWithSearch: true,
        lockedItemsMeanConfirmation: false, dismissesPrompts: false,
        unlockDialogBusName: "org.gnome.keyring.SystemPrompter")
    static let kwallet = ProviderTraits(
        name: "KWallet", replacesSecretInPlace: false, readsSecretWithSearch: true,
        lockedItemsMeanConfirmation: false, dismissesPrompts: true, unlockDialogBusName: nil)
    static let keepassxc = ProviderTraits(
        name: "KeePassXC", replacesSecretInPlace: true, readsSecretWithSearch: false,
        lockedItemsMeanConfirmation: true, dismissesPrompts: true, unlockDialogBusName: nil)
    static let other = ProviderTraits(
        name: nil, replacesSecretInPlace: false, readsSecretWithSearch: true,
        lockedItemsMeanConfirmation: false, dismissesPrompts: false, unlockDialogBusName: nil)
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
