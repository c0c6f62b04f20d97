import Foundation
import Testing
@testable import SecureDictionary

@Suite struct ProcessWriterLockTests {
    let directory: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sd-lock-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    func item() throws -> KeyringItem { try KeyringItem(dictionaryName: "lock", applicationID: "test.lock") }

    @Test func secondHolderTimesOut() throws {
        let first = try ProcessWriterLock(item: item(), directory: directory)
        let second = try ProcessWriterLock(item: item(), directory: directory)   // another open file, as in another process
        try first.lock(timeout: .seconds(1))
        #expect(throws: SecureDictionaryError.timedOut) { try second.lock(timeout: .milliseconds(50)) }
        first.unlock()
        try second.lock(timeout: .seconds(1))
        second.unlock()
    }

    @Test func stampsChangeOnlyWhenWritten() throws {
        let lock = try ProcessWriterLock(item: item(), directory: directory)
        let before = lock.readStamp()
        #expect(lock.readStamp() == before)
        let written = lock.writeNewStamp()
        #expect(written != before)
        #expect(try ProcessWriterLock(item: item(), directory: directory).readStamp() == written)
    }

    @Test func aRemovedLockFileIsReopenedSoBothSidesLockTheSameFile() throws {
        let stale = try ProcessWriterLock(item: item(), directory: directory)
        try FileManager.default.removeItem(atPath: stale.path)          // e.g. the runtime folder was cleaned
        let fresh = try ProcessWriterLock(item: item(), directory: directory)   // creates a new file
        try fresh.lock(timeout: .seconds(1))
        // Without the reopen, `stale` would lock its deleted file and both would "hold" the lock.
        #expect(throws: SecureDictionaryError.timedOut) { try stale.lock(timeout: .milliseconds(50)) }
        fresh.unlock()
        try stale.lock(timeout: .seconds(1))
        stale.unlock()
    }

    @Test func aDirectoryOthersCanWriteIsRefused() throws {
        let shared = directory + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o777])
        chmod(shared, 0o777)
        #expect { try ProcessWriterLock.privateDirectoryForTesting(shared) } throws: { error in
            if case SecureDictionaryError.lockFileUnavailable = error { return true }
            return false
        }
    }
}
