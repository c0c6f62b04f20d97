import CLibSecret
import CSecretShim
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The cross-process writer lock of one item: a well-known name on the D-Bus session bus.
///
/// Why the bus and not a lock file: every process that reaches a keyring reaches it through
/// the same bus, whatever its `XDG_RUNTIME_DIR`, `/tmp` or sandbox; a lock folder is not
/// shared that widely (cron jobs, `ssh` sessions, `sudo`, Flatpak apps each see another).
/// And dbus-daemon gives what a fair lock needs: requesters queue in arrival order, the
/// next in line owns the name as soon as it is released, a process that dies releases its
/// names, and the owner's process id can be asked for, so a stuck holder can be named.
///
/// Rules, and why:
/// 1. The name is `<applicationID>.__SecureDictionary__.h<hash>` when the application ID is
///    a valid bus-name prefix (a Flatpak app may own names under its own ID), else
///    `io.github.securedictionary.lock.h<hash>`; the hash covers collection and item name.
/// 2. Threads of this process queue on an in-process ``FairLock`` per name first: the bus
///    grants a name per connection, and every store in the process shares one connection.
/// 3. A bus that refuses the name (a sandbox's proxy, a bus policy) or is missing makes the
///    lock unusable, never the write: one warning is logged and writes go on without it.
final class BusNameWriterLock: ItemWriterLock {
    let busName: String
    private let local: FairLock
    private let logger: Logger
    private let warned = Atomic<Bool>(false)

    init(item: KeyringItem, logger: Logger) {
        busName = Self.busName(for: item)
        local = Self.localLock(for: busName)
        self.logger = logger
    }

    func acquire(until deadline: Deadline) throws(SecureDictionaryError) -> Bool {
        guard local.lock(until: deadline) else { throw .timedOut }  // a thread of this process holds it
        let deadlineMicroseconds = g_get_monotonic_time() + gint64(Self.microseconds(deadline.remaining))
        var error: UnsafeMutablePointer<GError>?
        switch sd_bus_name_lock(busName, deadlineMicroseconds, &error) {
        case 1:
            return true
        case 0:
            local.unlock()
            throw heldError()
        default:
            local.unlock()
            let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
            g_clear_error(&error)
            if !warned.exchange(true, ordering: .relaxed) {
                logger.warning(
                    "the cross-process writer lock is unusable; writing without it (still checked against the keyring)",
                    metadata: ["bus-name": "\(busName)", "reason": "\(message)"])
            }
            // The local lock is not held now: the caller writes with neither.
            return false
        }
    }

    func release() {
        sd_bus_name_unlock(busName)
        local.unlock()
    }

    /// Who holds the name now, as the error to throw at the deadline.
    private func heldError() -> SecureDictionaryError {
        let pid = sd_bus_name_owner_pid(busName)
        guard pid > 0 else { return .timedOut }  // released just now: nobody to name
        return .lockHeld(pid: Int(pid), command: Self.command(of: Int32(pid)))
    }

    // MARK: Names

    static func busName(for item: KeyringItem) -> String {
        let hash = String(fnv1a("\(item.collection.alias)\u{0}\(item.name)"), radix: 16)
        let candidate = "\(item.applicationID).__SecureDictionary__.h\(hash)"
        return isValidBusName(candidate) ? candidate : "io.github.securedictionary.lock.h\(hash)"
    }

    /// The D-Bus rules for a well-known name: at most 255 bytes, two or more elements of
    /// `[A-Za-z0-9_-]`, none empty or starting with a digit.
    static func isValidBusName(_ name: String) -> Bool {
        guard name.utf8.count <= 255 else { return false }
        let elements = name.split(separator: ".", omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        return elements.allSatisfy { element in
            guard let first = element.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
            return element.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "-"
            }
        }
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

    private static let localLocks = Mutex<[String: FairLock]>([:])

    private static func localLock(for name: String) -> FairLock {
        localLocks.withLock { locks in
            if let lock = locks[name] { return lock }
            let lock = FairLock()
            locks[name] = lock
            return lock
        }
    }

    // MARK: Helpers

    private static func microseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }

    /// The command name of a process (`/proc/PID/comm`), or `nil` when it cannot be read.
    static func command(of pid: Int32) -> String? {
        guard let file = fopen("/proc/\(pid)/comm", "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        let text = String(cString: buffer).trimmingCharacters(in: "\n")
        return text.isEmpty ? nil : text
    }
}

extension String {
    fileprivate func trimmingCharacters(in character: Character) -> String {
        var text = Substring(self)
        while text.last == character { text = text.dropLast() }
        return String(text)
    }
}
