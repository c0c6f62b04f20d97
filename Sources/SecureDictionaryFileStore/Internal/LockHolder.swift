import ProcessSpawning
import SecureDictionary

#if canImport(Glibc)
    import Glibc
#endif

/// The process that holds a folder's `flock`, as the kernel tells (`/proc/locks`), for
/// `SecureDictionaryError.lockHeld(pid:command:)`.
///
/// ```swift
/// let holder = LockHolder.of(folderDescriptor)      // (pid, command) or nil: unknown
/// ```
///
/// Why not a pid file the holder writes: it names the last writer, which may be gone, not the
/// holder, and a process holding the lock would go unnamed. `/proc/locks` lists every
/// `flock` with the pid that took it and the device and inode it locks; that pid is then
/// checked to have the folder open still (it may have exited, leaving the lock to a child
/// that inherited the descriptor): otherwise the holder is unknown, and said so.
enum LockHolder {
    /// The holder of the `flock` on the open folder `descriptor`, or `nil` when unknown.
    static func of(_ descriptor: Int32) -> (pid: Int32, command: String?)? {
        var status = stat()
        guard fstat(descriptor, &status) == 0, let file = fopen("/proc/locks", "r") else { return nil }
        defer { fclose(file) }
        let device = UInt64(status.st_dev)
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
        let minor = (device & 0xff) | ((device >> 12) & ~0xff)
        let wanted = String(major, radix: 16) + ":" + String(minor, radix: 16) + ":" + String(status.st_ino)
        var line = [CChar](repeating: 0, count: 512)
        while fgets(&line, Int32(line.count), file) != nil {
            // "3: FLOCK  ADVISORY  WRITE 473 fe:00:16220702 0 EOF"; waiters have "->" after the number.
            let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]), pid > 0 else { continue }
            guard sameDevice(String(fields[5]), wanted) else { continue }
            guard stillHolds(pid, device: status.st_dev, inode: status.st_ino) else { return nil }
            return (pid, ProcessName.command(of: pid))
        }
        return nil
    }

    /// `fe:00:123` and `fe:0:123` are one device: compares the numbers, not the text.
    private static func sameDevice(_ listed: String, _ wanted: String) -> Bool {
        let parse = { (text: String) -> [UInt64] in
            let parts = text.split(separator: ":")
            guard parts.count == 3 else { return [] }
            return [UInt64(parts[0], radix: 16), UInt64(parts[1], radix: 16), UInt64(parts[2])].compactMap { $0 }
        }
        let listedNumbers = parse(listed)
        return listedNumbers.count == 3 && listedNumbers == parse(wanted)
    }

    /// Whether `pid` runs and has the folder open (or runs as a user whose descriptors this
    /// process may not list, so it cannot be checked).
    private static func stillHolds(_ pid: Int32, device: UInt, inode: UInt) -> Bool {
        guard let listing = opendir("/proc/\(pid)/fd") else { return errno == EACCES }
        defer { closedir(listing) }
        for name in DirectoryEntries.names(in: listing) {
            guard !name.hasPrefix(".") else { continue }
            var status = stat()
            if stat("/proc/\(pid)/fd/\(name)", &status) == 0, status.st_dev == device, status.st_ino == inode { return true }
        }
        return false
    }
}
