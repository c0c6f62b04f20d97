import Glibc
import SecureDictionaryTestSupport
import Testing

/// `DirectoryEntries`, the one reader of `readdir`'s records (the file stores' folder
/// listings, `Spawn`'s descriptor list).
///
/// Before: every listing copied the whole `d_name` array of each record
/// (`withUnsafeBytes(of: entry.pointee.d_name)`), 256 bytes, although a record is only
/// `d_reclen` bytes long. The last record of readdir's buffer was copied from beyond the
/// buffer, and one process writing 3,000 dictionaries into one file-store folder (each write
/// lists it) was killed by SIGSEGV in 5 of 5 runs. A record that ends where the readable
/// memory ends shows it in every run: that copy faults on it.
@Suite struct DirectoryEntriesTests {
    /// Runs `body` with a record for `name` (as `getdents64` lays one out, `d_reclen` bytes,
    /// padded with NULs to 8) placed so that it ends exactly at a page nobody may read.
    func withRecordAtTheEndOfReadableMemory(_ name: String, _ body: (UnsafePointer<dirent>) -> Void) throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let memory = try #require(
            mmap(nil, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0).flatMap {
                $0 == MAP_FAILED ? nil : $0
            })
        defer { munmap(memory, 2 * page) }
        #expect(mprotect(memory + page, page, PROT_NONE) == 0)
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        let length = (nameOffset + name.utf8.count + 1 + 7) / 8 * 8
        let record = memory + page - length
        memset(record, 0, length)
        record.storeBytes(of: UInt16(length), toByteOffset: MemoryLayout<dirent>.offset(of: \dirent.d_reclen)!, as: UInt16.self)
        for (index, byte) in name.utf8.enumerated() {
            record.storeBytes(of: byte, toByteOffset: nameOffset + index, as: UInt8.self)
        }
        body(UnsafePointer(record.assumingMemoryBound(to: dirent.self)))
    }

    @Test(arguments: ["a", "3f9c2e8a41b7d6050c1e9f2a7b3d8e64.sdict", ".", String(repeating: "n", count: 255)])
    func aNameIsReadWithinItsRecord(_ name: String) throws {
        try withRecordAtTheEndOfReadableMemory(name) { entry in
            #expect(DirectoryEntries.name(of: entry) == name)
        }
    }

    @Test func aListingHasEveryName() throws {
        let folder = "/tmp/sd-entries-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkdir(folder, 0o700) == 0)
        defer { _ = try? ChildProcess.run("/bin/rm", ["-rf", folder]) }
        let names = (0..<600).map { "entry-\($0)-" + String(repeating: "x", count: $0 % 40) }
        for name in names { close(open("\(folder)/\(name)", O_CREAT | O_WRONLY, 0o600)) }
        let listing = try #require(opendir(folder))
        defer { closedir(listing) }
        #expect(Set(DirectoryEntries.names(in: listing)) == Set(names + [".", ".."]))
    }
}
