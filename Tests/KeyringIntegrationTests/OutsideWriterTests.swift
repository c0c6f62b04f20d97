import Foundation
import SecureDictionaryTestSupport
import Synchronization
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// "No lost updates, whoever writes": no acknowledged write is lost to a writer the library did not
    /// see, no local folder can break reads or writes, and one deadline bounds a call.
    @Suite struct OutsideWriters {
        /// A writer whose environment gives it another (or no usable) runtime folder: cron,
        /// `ssh` without pam_systemd, `sudo -E`, a Flatpak app. The old lock-file stamp made
        /// our next write erase its change.
        @Test func writersInOtherEnvironmentsAreKept() throws {
            let scratch = try Scratch()
            let readOnly = try scratch.folder("read-only", mode: 0o500)
            let environments: [(String, [String: String])] = [
                ("XDG_RUNTIME_DIR unset", ["XDG_RUNTIME_DIR": ""]),
                ("another runtime folder", ["XDG_RUNTIME_DIR": try scratch.folder("other").path]),
                ("a relative runtime folder", ["XDG_RUNTIME_DIR": "relative-runtime"]),
                ("a missing runtime folder", ["XDG_RUNTIME_DIR": scratch.url.appendingPathComponent("missing/run").path]),
                ("a read-only runtime folder", ["XDG_RUNTIME_DIR": readOnly.path]),
            ]
            for (label, environment) in environments {
                let test = TestItem("environment")
                let dictionary = try test.open()  // we load
                try dictionary.setValue("ours", forKey: "a")
                let other = try KeyringHarness.run(
                    KeyringHarness.writer, ["set", test.appID, test.name, "x", "theirs"],
                    environment: environment)
                #expect(other.status == 0, "\(label): the other writer failed: \(other.stderr)")
                try dictionary.setValue("ours too", forKey: "y")  // we write, without a reload
                #expect(try test.openFresh().snapshot == ["a": "ours", "x": "theirs", "y": "ours too"], "\(label)")
            }
        }

        /// secret-tool, python `keyring` or `secretstorage` replace the item between our load
        /// and our write: our write keeps their change.
        @Test func anOutsideToolsWriteIsKept() throws {
            let test = TestItem("outside")
            let dictionary = try test.open()
            try dictionary.setValue("ours", forKey: "a")
            try test.plant(try BinaryPropertyListCoding.encode(["a": "ours", "x": "from python"]))
            try dictionary.setValue("ours too", forKey: "y")
            #expect(try test.openFresh().snapshot == ["a": "ours", "x": "from python", "y": "ours too"])
            #expect(dictionary["x"] == "from python")
        }

        /// The check asks for the secret at the path the item was last read at, together with
        /// the search. An outside tool gives that item other attributes, so the path now holds
        /// another item, and creates ours anew at another path: the check must read the new
        /// item, not the one at the old path.
        @Test func aCheckReadsTheItemTheSearchFindsNotTheOneAtTheLastPath() throws {
            let test = TestItem("moved")
            let dictionary = try test.open()
            try dictionary.setValue("ours", forKey: "a")
            try dictionary.setValue("ours", forKey: "b")  // this connection has read it at its path
            var moved = try test.item.attributes
            moved["dictionary"] = "moved-away"
            let retag = try KeyringHarness.fixture(
                ["retag"] + (try test.fixtureAttributes)
                    + KeyringHarness.attributeArguments(moved).map {
                        $0 == "--attr" ? "--to" : $0
                    })
            try #require(retag.status == 0, "retag: \(retag.stderr)")
            defer { _ = try? KeyringHarness.fixture(["delete"] + KeyringHarness.attributeArguments(moved)) }
            try test.plant(try BinaryPropertyListCoding.encode(["x": "theirs"]))

            try dictionary.setValue("ours too", forKey: "y")
            #expect(try test.openFresh().snapshot == ["x": "theirs", "y": "ours too"])
        }

        /// Nothing is written outside the keyring: no lock files, no folders.
        @Test func noFileIsCreatedOutsideTheKeyring() throws {
            let scratch = try Scratch()
            let runtime = try scratch.folder("runtime")
            let temporary = try scratch.folder("tmp")
            let test = TestItem("no-files")
            let other = try KeyringHarness.run(
                KeyringHarness.writer, ["set", test.appID, test.name, "k", "v"],
                environment: ["XDG_RUNTIME_DIR": runtime.path, "TMPDIR": temporary.path])
            #expect(other.status == 0, "\(other.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: runtime.path).isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path).isEmpty)
        }

        /// A process stopped while it holds the writer lock is named in the error, which is not
        /// the frozen-daemon `timedOut`; once it is gone, writes go on.
        @Test func aStoppedLockHolderIsNamed() throws {
            let test = TestItem("held")
            let holder = try LiveChild(KeyringHarness.writer, ["hold", test.appID, test.name])
            defer {
                holder.kill(SIGKILL)
                holder.finish()
            }
            let line = holder.nextLine(timeout: .seconds(30)) ?? ""
            #expect(line.hasPrefix("holding \(holder.pid)"), "holder said: \(line)")
            holder.kill(SIGSTOP)

            let dictionary = try test.openFresh(timeout: .seconds(1))
            let start = ContinuousClock.now
            #expect(throws: SecureDictionaryError.lockHeld(pid: Int(holder.pid), command: "sd-test-writer")) {
                try dictionary.setValue("blocked", forKey: "k")
            }
            #expect(ContinuousClock.now - start < .seconds(3))  // the 1 s deadline, and a slow machine's margin

            holder.kill(SIGKILL)  // dies holding the lock: the bus releases it
            holder.finish()
            try dictionary.setValue("after", forKey: "k")
            #expect(try test.openFresh()["k"] == "after")
        }

        /// Threads queued behind a write stuck on a frozen daemon fail at their own deadline;
        /// before, the k-th thread waited k timeouts.
        @Test func threadsAgainstAFrozenDaemonFailByTheirDeadline() throws {
            let test = TestItem("frozen-threads")
            let timeout = Duration.milliseconds(500)
            let dictionary = try test.open(.init(timeout: timeout, store: SecretServiceStore()))
            try KeyringHarness.daemon("freeze")
            var thawed = false
            defer { if !thawed { try? KeyringHarness.daemon("thaw") } }
            let done = DispatchGroup()
            let finished = Mutex<[(Duration, SecureDictionaryError?)]>([])
            let start = ContinuousClock.now
            for index in 0..<4 {
                done.enter()
                Thread {
                    var failure: SecureDictionaryError?
                    do throws(SecureDictionaryError) { try dictionary.setValue(.integer(index), forKey: "k\(index)") } catch {
                        failure = error
                    }
                    finished.withLock { $0.append((ContinuousClock.now - start, failure)) }
                    done.leave()
                }.start()
            }
            done.wait()
            try KeyringHarness.daemon("thaw")
            thawed = true
            let results = finished.withLock { $0 }
            #expect(results.allSatisfy { $0.1 == .timedOut })
            let slowest = results.map(\.0).max() ?? .zero
            #expect(slowest < timeout * 2, "slowest thread returned after \(slowest)")
        }
    }
}

/// A private scratch folder, removed when the test ends.
final class Scratch {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("sd-scratch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func folder(_ name: String, mode: Int = 0o700) throws -> URL {
        let folder = url.appendingPathComponent(name)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: folder.path)
        return folder
    }

    deinit {
        for folder in (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [] {
            try? FileManager.default.setAttributes(
                [.posixPermissions: 0o700],
                ofItemAtPath: url.appendingPathComponent(folder).path)
        }
        try? FileManager.default.removeItem(at: url)
    }
}
