import SecureDictionaryAdoption
import SecureDictionaryFileStore
import Testing

@testable import SecureDictionary

/// Every message says what happened in one short sentence and names the one fix
/// for the provider and environment it happened in. (The `locked` message was one line of
/// about 700 characters covering every provider and environment.)
@Suite struct ErrorMessageTests {
    static let providers: [String?] = ["gnome-keyring", "KWallet", "KeePassXC", InMemoryKeyringStore.providerName, nil]

    static var contexts: [ErrorContext] {
        providers.flatMap { provider in
            ErrorContext.Surroundings.allCases.flatMap { surroundings in
                [true, false].flatMap { bus in
                    [true, false].map { noDialog in
                        ErrorContext(
                            provider: provider, surroundings: surroundings, hasSessionBus: bus,
                            unlockDialogUnavailable: noDialog)
                    }
                }
            }
        }
    }

    /// A type mismatch says which kind of type each name is and what to do, not "expected Int,
    /// found string".
    @Test func aTypeMismatchNamesBothTypesAndTheFix() {
        let message = SecureDictionaryError.typeMismatch(expected: "Int", found: "string").description
        #expect(message.contains("property-list type string") && message.contains("(Int)"), "\(message)")
        #expect(message.contains("read it as string, or write it again as Int"), "\(message)")
    }

    /// One of every case, with the longest payloads a user meets.
    static let errors: [SecureDictionaryError] = [
        .serviceUnavailable(reason: "Cannot autolaunch D-Bus without X11 $DISPLAY, and more text the bus may add here"),
        .noSuchCollection(alias: "session"), .sandboxed(advice: Sandbox.flatpak(appID: "org.example.TextEditor").advice),
        .sandboxed(advice: Sandbox.snap(name: "text-editor").advice), .locked, .timedOut, .connectionLost, .cancelled,
        .corrupt(reason: "the size 5000000 is above the limit"), .unsupportedFormatVersion("bplist15"),
        .tooLarge(size: 5_000_000, limit: 4_194_304), .invalidValue(reason: "nested deeper than 64 levels"),
        .typeMismatch(expected: "Int", found: "string"), .invalidName(reason: "empty"), .ambiguous(count: 2),
        .lockHeld(pid: 123_456, command: "sd-reliability"), LockQueue.heldHere, .confirmationRequired, .confirmationDenied,
        .unlockDismissed, .sessionRejected(reason: "Client public key size is invalid"),
        .writeNotVerified(restored: true), .writeNotVerified(restored: false),
        .store(FileStoreError.portalUnavailable(reason: "no portal on the bus")),
        .alreadyExists(name: "org.example.App.__SecureDictionary__"),
        .sourceChanged(name: "org.example.App.__SecureDictionary__.settings"),
        .sameStore(name: "org.example.App.__SecureDictionary__.settings"),
        .store(
            FileStoreError.unsafePath(
                path: "/home/someone/.local/share/securedictionary",
                reason: "it is a symbolic link: remove the link and use the real folder's path")),
        .store(
            FileStoreError.unsafePath(
                path: "/var/lib/example-service/securedictionary",
                reason: "others may write to it (mode 0777): chmod 700 the folder")),
        .store(
            FileStoreError.fileUnavailable(
                path: "/home/someone/.local/share/securedictionary/0123456789abcdef0123456789abcdef.sdict",
                reason: "No space left on device")),
        .store(FileStoreError.wrongPassphrase), .store(FileStoreError.wrongKey(source: "systemd credential 'securedictionary'")),
        .store(FileStoreError.credentialUnavailable(name: "securedictionary", reason: "$CREDENTIALS_DIRECTORY is not set")),
        .store(FileStoreError.passphraseUnavailable(reason: "no terminal to ask on (/dev/tty: No such device or address)")),
        .store(
            FileStoreError.rolledBack(
                path: "/home/someone/.local/share/securedictionary/0123456789abcdef0123456789abcdef.sdict")),
        .store(FileStoreError.noStoreAvailable(reason: "no D-Bus session bus")),
        .store(AdoptionError.storeHoldsNoItems(operation: "exportItems")),
        .keyring(domain: "g-dbus-error-quark", code: 19, message: "No such interface"),
    ]

    /// 200 characters: about two lines of a terminal; the old `locked` message took 700.
    static let limit = 200

    @Test func everyMessageIsShortInEveryContext() {
        for context in Self.contexts {
            for error in Self.errors {
                let text = error.description(in: context)
                #expect(text.count <= Self.limit, "\(text.count) characters: \(text)")
                #expect(text.hasSuffix("."), "\(text)")
            }
        }
    }

    /// A library message never assumes that the command-line tool is installed:
    /// it may name it only as optional.
    @Test func noMessageAssumesTheCommandLineTool() {
        for context in Self.contexts {
            for error in Self.errors {
                let text = error.description(in: context)
                #expect(!text.contains("secure-dict") || text.contains("if installed"), "\(text)")
            }
        }
    }

    /// `locked` and `confirmationRequired` name the provider that answered, and its fix.
    @Test func theProviderIsNamed() {
        for context in Self.contexts {
            guard let provider = context.provider else { continue }
            for error in [SecureDictionaryError.locked, .confirmationRequired] {
                #expect(error.description(in: context).contains(provider), "\(error) in \(context)")
            }
        }
    }

    @Test func theFixFitsWhereItHappened() {
        func context(_ provider: String?, _ surroundings: ErrorContext.Surroundings, noDialog: Bool = false) -> ErrorContext {
            ErrorContext(provider: provider, surroundings: surroundings, hasSessionBus: true, unlockDialogUnavailable: noDialog)
        }
        let overSSH = SecureDictionaryError.locked.description(in: context("gnome-keyring", .ssh))
        #expect(overSSH.contains("gnome-keyring-daemon --replace --unlock"))
        let onDesktop = SecureDictionaryError.locked.description(in: context("gnome-keyring", .desktop))
        #expect(onDesktop.contains("Passwords and Keys") && !onDesktop.contains("gnome-keyring-daemon"))
        let noDialog = SecureDictionaryError.locked.description(in: context("gnome-keyring", .desktop, noDialog: true))
        #expect(noDialog.contains("no unlock dialog can be shown here") && noDialog.contains("gnome-keyring-daemon"))
        #expect(SecureDictionaryError.locked.description(in: context("KeePassXC", .ssh)).contains("KeePassXC window"))
        #expect(SecureDictionaryError.locked.description(in: context("KWallet", .desktop)).contains("KWalletManager"))
        let noBus = ErrorContext(provider: nil, surroundings: .ssh, hasSessionBus: false, unlockDialogUnavailable: false)
        #expect(SecureDictionaryError.serviceUnavailable(reason: "x").description(in: noBus).contains("EncryptedFileStore"))
    }

    /// KeePassXC's access confirmation said "nobody did in time: allow it in the KeePassXC
    /// window" where no window had been shown (no dialog unless the caller opts in). It says
    /// that its dialog shows only when the program asks for dialogs, and which setting turns
    /// the confirmation off; never that a window is there.
    @Test func keePassXCsConfirmationDoesNotSpeakOfAWindowNobodyShowed() {
        for surroundings in ErrorContext.Surroundings.allCases {
            let context = ErrorContext(
                provider: "KeePassXC", surroundings: surroundings, hasSessionBus: true, unlockDialogUnavailable: false)
            let message = SecureDictionaryError.confirmationRequired.description(in: context)
            #expect(!message.contains("in time") && !message.contains("in the KeePassXC window"), "\(message)")
            #expect(message.contains("opts in to dialogs") && message.contains("Confirm when passwords are retrieved by clients"))
        }
    }

    @Test func theSurroundingsAreReadFromTheEnvironment() {
        #expect(ErrorContext.surroundings(["SSH_CONNECTION": "1 2 3 4", "DISPLAY": ":0"]) == .ssh)
        #expect(ErrorContext.surroundings(["WAYLAND_DISPLAY": "wayland-0"]) == .desktop)
        #expect(ErrorContext.surroundings(["DISPLAY": ""]) == .headless)
    }

    /// With no keyring, the message names this project's answers for the
    /// environment (the encrypted-file stores; for tests, a private keyring), as an API: a
    /// library message never assumes the command-line tool is installed, and never sends the
    /// user to `dbus-run-session -- bash` or to `secure-dict doctor`.
    @Test func withoutAKeyringTheFixIsThisProjectsAnswerForTheEnvironment() {
        let error = SecureDictionaryError.serviceUnavailable(reason: "The name org.freedesktop.secrets was not provided")
        for bus in [true, false] {
            func text(_ surroundings: ErrorContext.Surroundings) -> String {
                error.description(
                    in: ErrorContext(
                        provider: nil, surroundings: surroundings, hasSessionBus: bus, unlockDialogUnavailable: false))
            }
            #expect(text(.ssh).contains("EncryptedFileStore"), "\(text(.ssh))")
            #expect(
                text(.headless).contains("EncryptedFileStore") && text(.headless).contains("keyring run"), "\(text(.headless))")
            for surroundings in ErrorContext.Surroundings.allCases {
                let message = text(surroundings)
                #expect(!message.contains("dbus-run-session") && !message.contains("doctor"), "\(message)")
                #expect(!message.contains("secure-dict") || message.contains("if installed"), "\(message)")
            }
        }
    }

    /// An `InMemoryKeyringStore` that is locked gives no gnome-keyring shell advice.
    @Test func aLockedInMemoryStoreSaysHowToUnlockItNotAKeyring() throws {
        let store = InMemoryKeyringStore()
        let settings = try SecureDictionary(name: "locked", applicationID: "test.messages", options: .init(store: store))
        store.setLocked(true)
        #expect(throws: SecureDictionaryError.locked) { try settings.setValue(1, forKey: "a") }
        // The store names itself unless a real provider answered in this process before it
        // (the whole test bundle runs in one process); it never hides a real provider.
        let provider = try #require(ErrorContext.current.provider, "the locked store recorded no provider")
        if provider == InMemoryKeyringStore.providerName {
            let message = SecureDictionaryError.locked.description
            #expect(message.contains("setLocked(false)") && !message.contains("gnome-keyring"), "\(message)")
        }
        for surroundings in ErrorContext.Surroundings.allCases {
            let message = SecureDictionaryError.locked.description(
                in: ErrorContext(
                    provider: InMemoryKeyringStore.providerName, surroundings: surroundings, hasSessionBus: false,
                    unlockDialogUnavailable: false))
            #expect(message.contains("setLocked(false)") && !message.contains("gnome-keyring"), "\(message)")
        }
    }

    /// The size error names the option that raises the limit; a provider other than KWallet is
    /// not told to update KWallet (gnome-keyring was, when another client had removed an item).
    @Test func theSizeLimitAndTheSessionAdviceNameWhatApplies() {
        for context in Self.contexts {
            #expect(
                SecureDictionaryError.tooLarge(size: 5_000_000, limit: 4_194_304).description(in: context).contains(
                    "Options.maximumSize"))
            let rejected = SecureDictionaryError.sessionRejected(reason: "x").description(in: context)
            #expect(rejected.contains("KWallet") == (context.provider == "KWallet" || context.provider == nil), "\(rejected)")
        }
    }
}
