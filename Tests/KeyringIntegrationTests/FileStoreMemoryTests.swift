import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionaryFileStore

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 31: the encrypted-file stores' secrets live only in buffers that are wiped. A process
/// (`sd-test-writer hygiene`) uses a credential store and a passphrase store, writes and
/// reads with both, forgets their keys and releases everything; a core taken with gdb's
/// `gcore` is then searched for 16-byte slices of each secret: the credential, the
/// passphrase, the key scrypt made of it, and the per-file keys HKDF made of both. Target:
/// 0 in the process's memory. Copies in the main thread's stack below its live frames and
/// in the saved CPU registers are residue no library can wipe, counted apart (as the
/// reliability suite does). The control (everything kept) must find the master secrets in
/// memory, or the scan proves nothing.
@Suite(.enabled(if: !PrivateKeyring.available || PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct FileStoreMemory {
    struct Scan {
        /// Fragments found in the process's memory (heap, data), by secret.
        var inMemory: [String: Int] = [:]
        /// Fragments in the main thread's stack below its frames and in the saved CPU
        /// registers: residue of the last copies, which no library can wipe (the reliability
        /// suite reports them apart too).
        var residue: [String: Int] = [:]
    }

    @Test func noKeyOfAFileStoreIsLeftInMemoryOnceForgotten() throws {
        let control = try scan(mode: "control")
        // The control holds a copy of the credential in ordinary memory; the stores keep theirs
        // (and the derived key) in locked pages that the core leaves out.
        #expect(control.inMemory["credential", default: 0] > 0, "the control found no credential: the scan is void \(control)")
        #expect(control.inMemory["derived key", default: 0] == 0, "a kept derived key is in the core: \(control)")
        let forgotten = try scan(mode: "forget")
        #expect(forgotten.inMemory.values.allSatisfy { $0 == 0 }, "left in memory: \(forgotten.inMemory)")
        print(
            "file store memory: control \(control.inMemory) (residue \(control.residue)); after forgetKey and release "
                + "\(forgotten.inMemory) (residue \(forgotten.residue))")
    }

    private func scan(mode: String) throws -> Scan {
        let gcore = try FileStoreProcesses.tool("gcore")
        let processes = try FileStoreProcesses()
        let base = processes.base
        let credential = try processes.makeCredential(in: "\(base)/credentials")
        let passphrase = "passphrase-" + (0..<6).map { _ in UUID().uuidString.prefix(4) }.joined()
        let app = "it.memory.\(UUID().uuidString)"

        let process = try LiveChild(
            KeyringHarness.writer, ["hygiene", app, mode],
            environment: ["CREDENTIALS_DIRECTORY": "\(base)/credentials", "SD_TEST_WRITER_FOLDER": "\(base)/files"])
        defer {
            try? process.send("done")
            process.finish(timeout: .seconds(60))
        }
        try process.send(passphrase)
        let printed = process.nextLine(timeout: .seconds(120)) ?? ""
        try #require(printed.hasPrefix("ready"), "\(printed)")

        let stack = try Self.mainStack(of: process.pid)
        let corePrefix = "\(base)/core"
        let dump = try ChildProcess.run(gcore, ["-o", corePrefix, "\(process.pid)"], timeout: .seconds(120))
        let coreFile = "\(corePrefix).\(process.pid)"
        defer { try? FileManager.default.removeItem(atPath: coreFile) }
        let core = try #require(try? Data(contentsOf: URL(fileURLWithPath: coreFile), options: .alwaysMapped), "gcore: \(dump)")

        // The secrets, as the stores derive them from the files they wrote.
        var secrets: [String: [UInt8]] = ["credential": credential, "passphrase": Array(passphrase.utf8)]
        let master = SecretBytes(copying: credential)
        let credentialFile = try processes.itemFile(in: "\(base)/files/credential")
        secrets["credential file key"] = try fileKey(of: credentialFile, master: master)
        let passphraseFile = try processes.itemFile(in: "\(base)/files/passphrase")
        let header = try EncryptedItemFile.header(of: Array(Data(contentsOf: URL(fileURLWithPath: passphraseFile))))
        let derived = try #require(header.key?.scrypt).derive(SecretBytes(copying: Array(passphrase.utf8)))
        secrets["derived key"] = derived.array
        secrets["passphrase file key"] = try fileKey(of: passphraseFile, master: derived)

        var result = Scan()
        let layout = try #require(CoreSegments(core), "the core is no ELF file")
        core.withUnsafeBytes { memory in
            for (name, secret) in secrets {
                // Two 16-byte slices of each 32-byte key; the middle of the shorter passphrase.
                let slices = secret.count >= 32 ? [Array(secret[0..<16]), Array(secret[16..<32])] : [Array(secret[4..<20])]
                for hit in slices.flatMap({ CoreScan.positions(of: $0, in: memory) }) {
                    if layout.isNote(hit) || layout.address(of: hit).map(stack.contains) == true {
                        result.residue[name, default: 0] += 1
                    } else {
                        result.inMemory[name, default: 0] += 1
                    }
                }
                result.inMemory[name, default: 0] += 0
            }
        }
        return result
    }

    /// The main thread's stack (`[stack]` in /proc/PID/maps).
    private static func mainStack(of pid: Int32) throws -> Range<UInt64> {
        // Read to the end: /proc files report a size of 0.
        let handle = try #require(FileHandle(forReadingAtPath: "/proc/\(pid)/maps"))
        let maps = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        let line = try #require(maps.split(separator: "\n").first { $0.hasSuffix("[stack]") })
        let bounds = line.prefix { $0 != " " }.split(separator: "-").compactMap { UInt64($0, radix: 16) }
        try #require(bounds.count == 2)
        return bounds[0]..<bounds[1]
    }

    /// The program headers of an ELF core: where each memory segment and the notes (the
    /// threads' saved registers) are in the file.
    struct CoreSegments {
        var loads: [(offset: Int, size: Int, address: UInt64)] = []
        var notes: [Range<Int>] = []

        init?(_ core: Data) {
            func integer(_ offset: Int, _ size: Int) -> UInt64 {
                (0..<size).reduce(UInt64(0)) { $0 | UInt64(core[core.startIndex + offset + $1]) << (8 * UInt64($1)) }
            }
            guard core.count > 64, core.prefix(4).elementsEqual([0x7F, 0x45, 0x4C, 0x46]), core[core.startIndex + 4] == 2
            else { return nil }
            let (table, entrySize, count) = (Int(integer(32, 8)), Int(integer(54, 2)), Int(integer(56, 2)))
            for index in 0..<count {
                let entry = table + index * entrySize
                let (type, offset, address, size) = (
                    integer(entry, 4), Int(integer(entry + 8, 8)), integer(entry + 16, 8), Int(integer(entry + 32, 8))
                )
                if type == 1 { loads.append((offset, size, address)) }
                if type == 4 { notes.append(offset..<(offset + size)) }
            }
        }

        func isNote(_ offset: Int) -> Bool { notes.contains { $0.contains(offset) } }

        func address(of offset: Int) -> UInt64? {
            loads.first { offset >= $0.offset && offset < $0.offset + $0.size }.map { $0.address + UInt64(offset - $0.offset) }
        }
    }

    private func fileKey(of file: String, master: SecretBytes) throws -> [UInt8] {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        let header = try EncryptedItemFile.header(of: bytes)
        let saltEnd = header.headerSize - EncryptedItemFile.nonceSize
        return EncryptedItemFile.fileKey(master, salt: Array(bytes[(saltEnd - EncryptedItemFile.saltSize)..<saltEnd]))
    }
}
