public import Glibc

/// The names in an open directory, read with `readdir(3)`, each one read in place, within its
/// record: for the tool, the test support and the file stores.
///
/// ```swift
/// guard let listing = opendir("/proc/self/fd") else { return }
/// defer { closedir(listing) }
/// let names = DirectoryEntries.names(in: listing)   // "." and ".." included
/// ```
///
/// Why in place: a record that `readdir` returns is `d_reclen` bytes long, the name and its
/// NUL rounded up to 8, not `MemoryLayout<dirent>.size`; copying the whole `d_name` array (as
/// `withUnsafeBytes(of: entry.pointee.d_name)` does) reads past a short record, and past
/// the end of readdir's buffer at its last record. One process that wrote 3,000 dictionaries
/// into one file-store folder, which lists the folder on each write, was killed so by SIGSEGV.
public enum DirectoryEntries {
    /// Every name `readdir` gives for `listing` (an `opendir` or `fdopendir` result), from
    /// where the stream is to its end; stops early at a read error, which it does not report.
    public static func names(in listing: OpaquePointer) -> [String] {
        var names: [String] = []
        while let entry = readdir(listing) { names.append(name(of: entry)) }
        return names
    }

    /// The name of one record from `readdir`, at most up to the record's end (`d_reclen`);
    /// bytes that are not UTF-8 become U+FFFD.
    public static func name(of entry: UnsafePointer<dirent>) -> String {
        let record = Int(entry.pointee.d_reclen)
        let length = strnlen(
            UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self),
            max(0, record - nameOffset))
        let start = UnsafeRawPointer(entry).advanced(by: nameOffset)
        return String(decoding: UnsafeRawBufferPointer(start: start, count: length), as: UTF8.self)
    }

    /// Where `d_name` starts in a record (19 on x86-64 and arm64 glibc).
    private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
}
