import CLibSecret
import CSecretShim

/// What the session bus says about a well-known name, asked within a deadline (`AutomaticStore`
/// asks before it chooses a store).
///
/// ```swift
/// if try SessionBusName.presence(of: SessionBusName.secretService, until: deadline) == .activatable {
///     _ = try SessionBusName.awaitOwner(of: SessionBusName.secretService, starting: true, until: deadline)
/// }
/// ```
package enum SessionBusName {
    /// The Secret Service's name, as libsecret reads it (`SECRET_SERVICE_BUS_NAME` replaces it).
    package static var secretService: String {
        g_getenv("SECRET_SERVICE_BUS_NAME").map { String(cString: $0) } ?? "org.freedesktop.secrets"
    }

    package enum Presence: Sendable, Equatable {
        /// A connection owns the name now.
        case owned
        /// Nobody owns it, and the bus can start it (D-Bus activation).
        case activatable
        /// Nobody owns it, and the bus cannot start it.
        case absent
    }

    package enum Arrival: Sendable, Equatable {
        /// It has an owner.
        case owned
        /// The bus says it has none, and none came by the deadline.
        case notYet
        /// The bus could not start it (its answer to `StartServiceByName`).
        case cannotStart(reason: String)
    }

    /// The process id of the owner of `name` (`nil`: no owner, or no answer by `deadline`).
    package static func ownerPID(of name: String, until deadline: Deadline) -> Int? {
        let pid = sd_bus_name_owner_pid(name, deadline.glibMicroseconds)
        return pid > 0 ? Int(pid) : nil
    }

    /// Who has `name` now (`NameHasOwner` and `ListActivatableNames`, one round trip).
    ///
    /// - Throws: ``SecureDictionaryError/timedOut`` when the bus did not answer by `deadline`;
    ///   ``SecureDictionaryError/serviceUnavailable(reason:)`` when there is no session bus.
    package static func presence(of name: String, until deadline: Deadline) throws(SecureDictionaryError) -> Presence {
        var error: UnsafeMutablePointer<GError>?
        switch sd_bus_name_presence(name, deadline.glibMicroseconds, &error) {
        case 2: return .owned
        case 1: return .activatable
        case 0: return .absent
        default: throw failure(error)
        }
    }

    /// Waits until `name` has an owner, asking the bus to start it first when `starting`.
    ///
    /// - Throws: as ``presence(of:until:)``.
    package static func awaitOwner(of name: String, starting: Bool, until deadline: Deadline)
        throws(SecureDictionaryError) -> Arrival
    {
        var error: UnsafeMutablePointer<GError>?
        switch sd_bus_name_await_owner(name, starting ? 1 : 0, deadline.glibMicroseconds, &error) {
        case 1: return .owned
        case 0: return .notYet
        default:
            if starting, let answer = error, g_dbus_error_is_remote_error(answer) != 0 {  // the bus's own answer
                defer { g_clear_error(&error) }
                return .cannotStart(reason: String(cString: answer.pointee.message))
            }
            throw failure(error)
        }
    }

    /// The bus did not answer in time (`timedOut`), or there is none (`serviceUnavailable`).
    private static func failure(_ error: UnsafeMutablePointer<GError>?) -> SecureDictionaryError {
        var error = error
        defer { g_clear_error(&error) }
        guard let failure = error else { return .serviceUnavailable(reason: "the session bus failed without an error") }
        if KeyringErrorMapping.isTimedOut(failure) { return .timedOut }
        return .serviceUnavailable(reason: String(cString: failure.pointee.message))
    }
}
