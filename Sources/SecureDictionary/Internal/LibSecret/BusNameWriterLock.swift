import CLibSecret
import CSecretShim
import Logging
import ProcessSpawning
import Synchronization

/// The cross-process writer lock of one item: a well-known name on the D-Bus session bus.
///
/// Why the bus and not a lock file: every process that reaches a keyring shares its bus,
/// whatever its `XDG_RUNTIME_DIR`, `/tmp` or sandbox (cron jobs, `ssh` sessions, `sudo`,
/// Flatpak apps each see another lock folder). And dbus-daemon queues requesters in order,
/// hands the name to the next at once, releases a dead process's names, and tells the owner's pid.
///
/// Invariants, and why:
/// - **One name per item, documented.** `<applicationID>.__SecureDictionary__.h<hash>` when
///   the application ID is a valid bus-name prefix (a Flatpak app may own names under its own
///   ID), else `io.github.securedictionary.lock.h<hash>`; the hash is of the item name alone
///   (application ID and dictionary name), never of the collection's alias: one collection
///   answers to several (`default` and `login` on gnome-keyring), and writers that named it
///   differently took two locks and lost 187 of 400 writes (one item name in two collections
///   only waits more). Part of the stored-item contract (README, "The stored item").
/// - **Threads first.** This process's threads queue on the name's ``LockQueue`` first: the
///   bus grants a name per connection, and every store in the process shares one.
/// - **Unusable is not fatal.** A bus that refuses the name (a sandbox's proxy, a policy) or is
///   missing: one warning, and writes go on without the lock (still checked against the
///   keyring). A bus that does not answer is ``SecureDictionaryError/timedOut`` at the
///   deadline, its handshake included (`sd_session_bus_until`; `FrozenBusTests`: a frozen bus
///   once held a 1 s call for 2.4 s).
/// - **The holder is named within the deadline.** The wait ends ``namingReserve(_:)`` early,
///   leaving time for ``SecureDictionaryError/lockHeld(pid:command:)``.
/// - **Held before the check.** ``acquire(waitingUntil:answeringBy:)`` returns once the bus
///   granted the name, so the check of the stored item starts after the previous holder's
///   write was answered. (Checking while RequestName travelled was sound only on a connection
///   shared with libsecret's proxy, and saved little: `mutation-10` 1.06–1.11× raw libsecret,
///   1.08–1.12× without.) Tests: `concurrentProcessesLoseNothing`, and Reliability's 8-process row.
final class BusNameWriterLock: ItemWriterLock {
    let busName: String
    private let local: LockQueue
    private let logger: Logger
    private let warned = Atomic<Bool>(false)
    /// The connection that owns the name while held: the name lasts only as long as it.
    private let held = Mutex<BusConnection?>(nil)

    /// A GDBusConnection reference handed over by the shim, released by `sd_bus_name_unlock`.
    private struct BusConnection: @unchecked Sendable {  // used only by the thread holding the lock
        let pointer: OpaquePointer
    }

    init(item: KeyringItem, logger: Logger) {
        busName = Self.busName(for: item)
        local = LockQueue.shared(for: busName)
        self.logger = logger
    }

    func queue(until deadline: Deadline) -> LockQueue { local }

    func acquire(waitingUntil waitDeadline: Deadline, answeringBy answerDeadline: Deadline) throws(SecureDictionaryError)
        -> Bool
    {
        // The bus answers within the later of the two: a wait that ends at once still asks.
        let deadline = answerDeadline.instant > waitDeadline.instant ? answerDeadline : waitDeadline
        let answered = deadline.glibMicroseconds - Self.namingReserve(deadline)
        let waitingEnds = waitDeadline.glibMicroseconds - Self.namingReserve(waitDeadline)
        var error: UnsafeMutablePointer<GError>?
        var connection: OpaquePointer?
        switch sd_bus_name_lock(busName, deadline.glibMicroseconds, answered, min(answered, waitingEnds), &connection, &error) {
        case 1:
            held.withLock { $0 = connection.map { BusConnection(pointer: $0) } }
            return true
        case 0:
            throw heldError(until: deadline)
        default:
            if KeyringErrorMapping.isTimedOut(error) {
                g_clear_error(&error)
                throw .timedOut  // the bus did not answer: the lock may well be usable
            }
            warnUnusable(error)
            return false
        }
    }

    private func warnUnusable(_ error: UnsafeMutablePointer<GError>?) {
        var error = error
        let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
        g_clear_error(&error)
        if !warned.exchange(true, ordering: .relaxed) {
            logger.warning(
                "the cross-process writer lock is unusable; writing without it (still checked against the keyring)",
                metadata: ["bus-name": "\(busName)", "reason": "\(message)"])
        }
    }

    func release() {
        if let connection = held.withLock({ $0.take() }) { sd_bus_name_unlock(connection.pointer, busName) }
    }

    /// Who holds the name now, as the error to throw at the deadline.
    private func heldError(until deadline: Deadline) -> SecureDictionaryError {
        guard let pid = SessionBusName.ownerPID(of: busName, until: deadline) else { return .timedOut }  // nobody to name
        return .lockHeld(pid: pid, command: ProcessName.command(of: Int32(pid)))
    }

    // MARK: Names

    static func busName(for item: KeyringItem) -> String {
        let hash = String(fnv1a(item.name), radix: 16)
        let candidate = "\(item.applicationID).__SecureDictionary__.h\(hash)"
        return isValidBusName(candidate) ? candidate : "io.github.securedictionary.lock.h\(hash)"
    }

    /// Whether `name` is a well-known bus name by the D-Bus rules (GLib's check): at most 255
    /// bytes, two or more elements of `[A-Za-z0-9_-]`, none empty or starting with a digit.
    static func isValidBusName(_ name: String) -> Bool {
        g_dbus_is_name(name) != 0 && g_dbus_is_unique_name(name) == 0
    }

    /// 64-bit FNV-1a of the UTF-8 bytes: the same in every process (unlike `Hasher`).
    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// How long before the deadline the wait for the name ends, to name its holder (a call to
    /// dbus-daemon, well under a millisecond unless it hangs): 50 ms, or a tenth of what is left.
    private static func namingReserve(_ deadline: Deadline) -> gint64 {
        gint64(min(50_000, deadline.remaining.microseconds / 10))
    }
}
