import FoundationEssentials
import Synchronization

/// Where an error happened, so that its message names the one fix for this provider and
/// environment (a locked gnome-keyring over SSH needs another than a locked KeePassXC on a
/// desktop; one message once listed every provider's fix in 700 characters). Holds no secret.
///
/// ```swift
/// ErrorContext.record(provider: "KWallet")
/// let text = SecureDictionaryError.locked.description(in: .current)
/// ```
package struct ErrorContext: Sendable, Equatable {
    /// Where the process runs, as far as the fix depends on it.
    package enum Surroundings: Sendable, Equatable, CaseIterable {
        /// A graphical session of the user (`DISPLAY` or `WAYLAND_DISPLAY`, not over SSH).
        case desktop
        /// An SSH login (`SSH_CONNECTION` or `SSH_TTY`), whatever display it forwards.
        case ssh
        /// No display and no SSH: a service, a container, CI.
        case headless
    }

    /// The provider that answered in this process (``ProviderTraits/name``), if told apart.
    package var provider: String?
    package var surroundings: Surroundings
    /// Whether a session bus can be found: `DBUS_SESSION_BUS_ADDRESS`, or `$XDG_RUNTIME_DIR/bus`.
    package var hasSessionBus: Bool
    /// Whether the provider's unlock dialog was asked for and could not be shown here.
    package var unlockDialogUnavailable: Bool

    private static let observed = Mutex<(provider: String?, unlockDialogUnavailable: Bool)>((nil, false))

    package static var current: ErrorContext {
        let environment = ProcessInfo.processInfo.environment
        let (provider, unlockDialogUnavailable) = observed.withLock { $0 }
        return ErrorContext(
            provider: provider, surroundings: surroundings(environment), hasSessionBus: hasSessionBus(environment),
            unlockDialogUnavailable: unlockDialogUnavailable)
    }

    /// Records which provider answered (the last one told apart wins).
    package static func record(provider: String?) {
        guard let provider else { return }
        observed.withLock { $0.provider = provider }
    }

    /// Records that the provider's unlock dialog cannot be shown in this session.
    package static func recordUnlockDialogUnavailable() {
        observed.withLock { $0.unlockDialogUnavailable = true }
    }

    static func surroundings(_ environment: [String: String]) -> Surroundings {
        func isSet(_ name: String) -> Bool { !(environment[name] ?? "").isEmpty }
        if isSet("SSH_CONNECTION") || isSet("SSH_TTY") { return .ssh }
        if isSet("DISPLAY") || isSet("WAYLAND_DISPLAY") { return .desktop }
        return .headless
    }

    static func hasSessionBus(_ environment: [String: String]) -> Bool {
        if !(environment["DBUS_SESSION_BUS_ADDRESS"] ?? "").isEmpty { return true }
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return false }
        return FileManager.default.fileExists(atPath: runtime + "/bus")
    }
}
