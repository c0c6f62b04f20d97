import CLibSecret
import CSecretShim

/// The one place that turns a GLib `GError` into a ``SecureDictionaryError``.
///
/// ```swift
/// guard secret_service_…_sync(…, &error) != 0 else { throw KeyringErrorMapping.map(error) }
/// ```
///
/// ``map(_:connecting:)`` reads (and frees) the `GError`; ``map(_:connecting:)-(Failure,_)``
/// decides from plain values, so a table test checks every row without libsecret.
///
/// Rules, and why:
/// - `IsLocked` (libsecret's code or the service's D-Bus error name) is ``SecureDictionaryError/locked``.
/// - A cancelled call is ``SecureDictionaryError/timedOut``: only the deadline cancels.
/// - A missing bus or service is ``SecureDictionaryError/serviceUnavailable(reason:)`` while
///   connecting, else ``SecureDictionaryError/connectionLost`` (the next call reconnects).
/// - A dismissed confirmation prompt (`sd_service_allow_confirmations`) is ``SecureDictionaryError/confirmationDenied``.
/// - Anything else keeps its GLib domain, code and message in ``SecureDictionaryError/keyring(domain:code:message:)``.
enum KeyringErrorMapping {
    /// A `GError` as plain values.
    struct Failure: Equatable {
        /// A GLib error domain, by its quark's name (as ``SecureDictionaryError/keyring(domain:code:message:)`` shows it).
        struct Domain: Equatable {
            static let secret = Domain(secret_error_get_quark()), io = Domain(g_io_error_quark())
            static let dbus = Domain(g_dbus_error_quark()), prompt = Domain(sd_prompt_error_quark())
            let name: String

            init(_ quark: GQuark) { name = g_quark_to_string(quark).map { String(cString: $0) } ?? "unknown" }
            private init(name: String) { self.name = name }
            static func other(_ name: String) -> Domain { Domain(name: name) }
        }

        var domain: Domain
        var code: Int32
        var message: String = ""
        /// The D-Bus error name the service answered with, when the error came from it.
        var remoteName: String?
    }

    /// Maps and frees `error` (`nil`: libsecret failed without saying why).
    static func map(_ error: UnsafeMutablePointer<GError>?, connecting: Bool = false) -> SecureDictionaryError {
        guard let error else {
            return .keyring(domain: "unknown", code: 0, message: "libsecret failed without an error")
        }
        defer { g_error_free(error) }
        return map(failure(of: error), connecting: connecting)
    }

    static func map(_ failure: Failure, connecting: Bool) -> SecureDictionaryError {
        let lost: SecureDictionaryError = connecting ? .serviceUnavailable(reason: failure.message) : .connectionLost
        switch (failure.domain, UInt32(bitPattern: failure.code), failure.remoteName) {
        case (.secret, SECRET_ERROR_IS_LOCKED.rawValue, _): return .locked
        case (.secret, SECRET_ERROR_NO_SUCH_OBJECT.rawValue, _): return .connectionLost
        case (.io, G_IO_ERROR_CANCELLED.rawValue, _), (.io, G_IO_ERROR_TIMED_OUT.rawValue, _),
            (.dbus, G_DBUS_ERROR_TIMEOUT.rawValue, _), (.dbus, G_DBUS_ERROR_TIMED_OUT.rawValue, _):
            return .timedOut
        case (.dbus, G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue, _), (.dbus, G_DBUS_ERROR_NAME_HAS_NO_OWNER.rawValue, _),
            (.dbus, G_DBUS_ERROR_SPAWN_SERVICE_NOT_FOUND.rawValue, _), (.dbus, G_DBUS_ERROR_SPAWN_EXEC_FAILED.rawValue, _),
            (.dbus, G_DBUS_ERROR_SPAWN_CHILD_EXITED.rawValue, _), (.dbus, G_DBUS_ERROR_SPAWN_FAILED.rawValue, _):
            return connecting ? .serviceUnavailable(reason: "no Secret Service on the session bus") : .connectionLost
        case (.io, G_IO_ERROR_CLOSED.rawValue, _), (.io, G_IO_ERROR_BROKEN_PIPE.rawValue, _),
            (.dbus, G_DBUS_ERROR_NO_REPLY.rawValue, _), (.dbus, G_DBUS_ERROR_DISCONNECTED.rawValue, _),
            (.dbus, G_DBUS_ERROR_UNKNOWN_OBJECT.rawValue, _), (.dbus, G_DBUS_ERROR_UNKNOWN_METHOD.rawValue, _),
            (.dbus, G_DBUS_ERROR_NO_SERVER.rawValue, _):
            return lost
        case (.io, _, _) where connecting, (.dbus, _, _) where connecting: return lost
        case (.prompt, UInt32(SD_PROMPT_DISMISSED), _): return .confirmationDenied
        case (_, _, "org.freedesktop.Secret.Error.IsLocked"?): return .locked
        case (_, _, "org.freedesktop.Secret.Error.NoSession"?), (_, _, "org.freedesktop.Secret.Error.NoSuchObject"?):
            return .connectionLost
        default: return .keyring(domain: failure.domain.name, code: Int(failure.code), message: failure.message)
        }
    }

    /// Whether the provider rejected a session as invalid (`org.freedesktop.DBus.Error.InvalidArgs`),
    /// which a new one may pass. Does not free `error`.
    static func isRejectedSession(_ error: UnsafeMutablePointer<GError>?) -> Bool {
        g_error_matches(error, g_dbus_error_quark(), Int32(G_DBUS_ERROR_INVALID_ARGS.rawValue)) != 0
    }

    /// Whether `error` is a wait of the shim's that ended at its deadline (`G_IO_ERROR_TIMED_OUT`).
    /// Does not free `error`.
    static func isTimedOut(_ error: UnsafeMutablePointer<GError>?) -> Bool {
        g_error_matches(error, g_io_error_quark(), Int32(G_IO_ERROR_TIMED_OUT.rawValue)) != 0
    }

    /// Reads a `GError` (without freeing it).
    private static func failure(of error: UnsafeMutablePointer<GError>) -> Failure {
        let remoteName = g_dbus_error_get_remote_error(error).map { name in
            defer { g_free(name) }
            return String(cString: name)
        }
        return Failure(
            domain: Failure.Domain(error.pointee.domain), code: error.pointee.code,
            message: error.pointee.message.map { String(cString: $0) } ?? "", remoteName: remoteName)
    }
}
