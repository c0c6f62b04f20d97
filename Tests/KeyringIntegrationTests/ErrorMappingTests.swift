import CLibSecret
import CSecretShim
import Testing

@testable import SecureDictionary

/// Every row of the GError → ``SecureDictionaryError`` table, without a keyring (like
/// swift-system's errno tests): a change to the mapping shows up here, row by row.
@Suite struct KeyringErrorMappingTable {
    typealias Failure = KeyringErrorMapping.Failure

    struct Row: Sendable, CustomTestStringConvertible {
        let failure: Failure
        let connecting: Bool
        let expected: SecureDictionaryError
        var testDescription: String {
            "\(failure.domain) \(failure.code)\(failure.remoteName.map { " \($0)" } ?? "")\(connecting ? " connecting" : "") → \(expected)"
        }
    }

    static func row(
        _ domain: Failure.Domain, _ code: UInt32, remote: String? = nil, connecting: Bool = false,
        _ expected: SecureDictionaryError
    ) -> Row {
        Row(
            failure: Failure(domain: domain, code: Int32(code), message: "m", remoteName: remote),
            connecting: connecting, expected: expected)
    }

    static let rows: [Row] = [
        // libsecret's own codes
        row(.secret, SECRET_ERROR_IS_LOCKED.rawValue, .locked),
        row(.secret, SECRET_ERROR_IS_LOCKED.rawValue, connecting: true, .locked),
        row(.secret, SECRET_ERROR_NO_SUCH_OBJECT.rawValue, .connectionLost),
        row(
            .secret, SECRET_ERROR_PROTOCOL.rawValue,
            .keyring(domain: Failure.Domain.secret.name, code: Int(SECRET_ERROR_PROTOCOL.rawValue), message: "m")),
        // GIO: only the deadline cancels
        row(.io, G_IO_ERROR_CANCELLED.rawValue, .timedOut),
        row(.io, G_IO_ERROR_TIMED_OUT.rawValue, .timedOut),
        row(.io, G_IO_ERROR_CLOSED.rawValue, connecting: true, .serviceUnavailable(reason: "m")),
        row(.io, G_IO_ERROR_CLOSED.rawValue, .connectionLost),
        row(.io, G_IO_ERROR_BROKEN_PIPE.rawValue, .connectionLost),
        row(.io, G_IO_ERROR_NOT_FOUND.rawValue, connecting: true, .serviceUnavailable(reason: "m")),
        row(
            .io, G_IO_ERROR_NOT_FOUND.rawValue,
            .keyring(domain: Failure.Domain.io.name, code: Int(G_IO_ERROR_NOT_FOUND.rawValue), message: "m")),
        row(.io, G_IO_ERROR_DBUS_ERROR.rawValue, remote: "org.freedesktop.Secret.Error.IsLocked", .locked),
        // D-Bus: a missing service while connecting; a vanished daemon afterwards
        row(
            .dbus, G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue, connecting: true,
            .serviceUnavailable(reason: "no Secret Service on the session bus")),
        row(.dbus, G_DBUS_ERROR_SERVICE_UNKNOWN.rawValue, .connectionLost),
        row(.dbus, G_DBUS_ERROR_NAME_HAS_NO_OWNER.rawValue, .connectionLost),
        row(
            .dbus, G_DBUS_ERROR_SPAWN_SERVICE_NOT_FOUND.rawValue, connecting: true,
            .serviceUnavailable(reason: "no Secret Service on the session bus")),
        row(.dbus, G_DBUS_ERROR_TIMEOUT.rawValue, .timedOut),
        row(.dbus, G_DBUS_ERROR_TIMED_OUT.rawValue, .timedOut),
        row(.dbus, G_DBUS_ERROR_NO_REPLY.rawValue, connecting: true, .serviceUnavailable(reason: "m")),
        row(.dbus, G_DBUS_ERROR_NO_REPLY.rawValue, .connectionLost),
        row(.dbus, G_DBUS_ERROR_DISCONNECTED.rawValue, .connectionLost),
        row(.dbus, G_DBUS_ERROR_UNKNOWN_OBJECT.rawValue, .connectionLost),
        row(.dbus, G_DBUS_ERROR_UNKNOWN_METHOD.rawValue, .connectionLost),
        row(.dbus, G_DBUS_ERROR_FAILED.rawValue, connecting: true, .serviceUnavailable(reason: "m")),
        row(.dbus, G_DBUS_ERROR_FAILED.rawValue, remote: "org.freedesktop.Secret.Error.NoSession", .connectionLost),
        row(
            .dbus, G_DBUS_ERROR_FAILED.rawValue,
            .keyring(domain: Failure.Domain.dbus.name, code: Int(G_DBUS_ERROR_FAILED.rawValue), message: "m")),
        // A confirmation prompt that was dismissed (KeePassXC asks before a client's first read)
        row(.prompt, UInt32(SD_PROMPT_DISMISSED), .confirmationDenied),
        row(.prompt, 99, .keyring(domain: "sd-prompt-error-quark", code: 99, message: "m")),
        // Any domain: the service's own error names, then the raw error
        row(.other("my-domain"), 7, remote: "org.freedesktop.Secret.Error.NoSuchObject", .connectionLost),
        row(.other("my-domain"), 7, .keyring(domain: "my-domain", code: 7, message: "m")),
    ]

    @Test(arguments: rows) func mapsEveryRow(_ row: Row) {
        #expect(KeyringErrorMapping.map(row.failure, connecting: row.connecting) == row.expected)
    }

    @Test func domainsKeepGLibsNames() {
        #expect(Failure.Domain.io.name == "g-io-error-quark")
        #expect(Failure.Domain.dbus.name == "g-dbus-error-quark")
        #expect(!Failure.Domain.secret.name.isEmpty && Failure.Domain.secret.name != "unknown")
    }

    /// KWallet 5 rejects some sessions with InvalidArgs: only that error earns a new session.
    @Test func aRejectedSessionIsToldApart() {
        let rejected = g_dbus_error_new_for_dbus_error(
            "org.freedesktop.DBus.Error.InvalidArgs", "Client public key size is invalid")
        defer { g_error_free(rejected) }
        #expect(KeyringErrorMapping.isRejectedSession(rejected))
        let gone = g_dbus_error_new_for_dbus_error("org.freedesktop.DBus.Error.ServiceUnknown", "no owner")
        defer { g_error_free(gone) }
        #expect(!KeyringErrorMapping.isRejectedSession(gone))
        #expect(!KeyringErrorMapping.isRejectedSession(nil))
    }

    @Test func aRealGErrorIsReadThenMapped() {
        let locked = g_error_new_literal(secret_error_get_quark(), Int32(SECRET_ERROR_IS_LOCKED.rawValue), "locked")
        #expect(KeyringErrorMapping.map(locked) == .locked)
        // A D-Bus error name carried by a GError, as GDBus makes it from a service's reply.
        let remote = g_dbus_error_new_for_dbus_error("org.freedesktop.Secret.Error.IsLocked", "locked")
        #expect(KeyringErrorMapping.map(remote) == .locked)
        #expect(
            KeyringErrorMapping.map(nil) == .keyring(domain: "unknown", code: 0, message: "libsecret failed without an error"))
    }
}
