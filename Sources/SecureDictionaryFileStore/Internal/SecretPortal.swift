import CLibSecret
import CSecretPortal
import ProcessSpawning
import SecureDictionary

/// The Secret portal (`org.freedesktop.portal.Secret`): it gives a sandboxed app a master
/// secret of its own, kept by the host's keyring (gnome-keyring's portal backend stores
/// one per app ID), without access to the keyring itself.
enum SecretPortal {
    /// The most bytes accepted (gnome-keyring's backend gives 64).
    static let capacity = 1024

    /// Throws `portalUnavailable` outside a sandbox, where the portal never serves (see
    /// `EncryptedFileStore.available`).
    @Sendable static func requireSandbox() throws(SecureDictionaryError) {
        guard Sandbox.current == nil else { return }
        throw .portalUnavailable(
            reason: "the Secret portal serves sandboxed apps (Flatpak, snap) only; outside a sandbox use SecretServiceStore")
    }

    /// Asks the portal for this app's master secret; for a locked host keyring, gnome-keyring's
    /// backend shows its unlock dialog (if a prompter runs), and the call waits up to `timeout`.
    ///
    /// - Throws: ``FileStoreError/portalUnavailable(reason:)`` without a portal with a Secret
    ///   backend on the bus; `SecureDictionaryError.locked` for response 2 (gnome-keyring 42.1:
    ///   a locked keyring and no dialog, a cancelled dialog, or its daemon gone);
    ///   `SecureDictionaryError.unlockDismissed` for response 1 (a cancel, where a backend
    ///   says so); `SecureDictionaryError.timedOut` past `timeout`.
    static func retrieveMasterSecret(timeout: Duration) throws(SecureDictionaryError) -> SecretBytes {
        let milliseconds = Int32(clamping: max(1, timeout.milliseconds))
        var buffer = [UInt8](repeating: 0, count: capacity)
        defer { Wipe.bytes(&buffer) }
        var length: gsize = 0
        var response: UInt32 = 0
        var error: UnsafeMutablePointer<GError>?
        let ok = buffer.withUnsafeMutableBufferPointer { buffer in
            sd_portal_retrieve_secret(milliseconds, buffer.baseAddress, gsize(buffer.count), &length, &response, &error)
        }
        if ok != 0 {
            guard length > 0 else { throw .portalUnavailable(reason: "the Secret portal gave an empty secret") }
            return buffer.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[..<Int(length)])) }
        }
        switch response {
        case 1: throw .unlockDismissed
        case 2: throw .locked
        default: break
        }
        defer { g_clear_error(&error) }
        guard let error else { throw .portalUnavailable(reason: "the Secret portal failed") }
        throw mapped(error.pointee)
    }

    private static func mapped(_ error: GError) -> SecureDictionaryError {
        let message = String(cString: error.message)
        if error.domain == g_io_error_quark() && error.code == G_IO_ERROR_TIMED_OUT.rawValue { return .timedOut }
        if error.domain == g_dbus_error_quark() {
            switch GDBusError(rawValue: UInt32(error.code)) {
            case G_DBUS_ERROR_TIMED_OUT, G_DBUS_ERROR_TIMEOUT, G_DBUS_ERROR_NO_REPLY: return .timedOut
            case G_DBUS_ERROR_SERVICE_UNKNOWN, G_DBUS_ERROR_NAME_HAS_NO_OWNER:
                return .portalUnavailable(
                    reason: "no desktop portal (org.freedesktop.portal.Desktop) on the session bus: install and "
                        + "start xdg-desktop-portal")
            case G_DBUS_ERROR_UNKNOWN_METHOD, G_DBUS_ERROR_UNKNOWN_INTERFACE, G_DBUS_ERROR_UNKNOWN_OBJECT:
                return .portalUnavailable(
                    reason: "the desktop portal has no Secret backend: install one (gnome-keyring provides it) "
                        + "and restart xdg-desktop-portal")
            case G_DBUS_ERROR_ACCESS_DENIED:
                return .portalUnavailable(reason: "the Secret portal refused: \(message)")
            default: break
            }
        }
        return .portalUnavailable(reason: "the Secret portal failed: \(message)")
    }
}
