// A second process for the integration tests.
//
//   sd-test-writer write APP NAME PREFIX COUNT INCREMENTS
//       sets PREFIX-0 … PREFIX-(COUNT-1), removes every key whose index ends in 9 right after
//       setting it, increments the shared "counter" INCREMENTS times inside update { };
//       prints "ok <increments done>"; exits 1 on the first error.
//   sd-test-writer set APP NAME KEY VALUE      one setValue; prints "ok <unix time after it>"
//   sd-test-writer spread APP COUNT FOLDERS    one setValue in each of the dictionaries d0 … d(COUNT-1)
//                                              of the file store, spread over the folders
//                                              SD_TEST_WRITER_FOLDER/f0 … f(FOLDERS-1); prints "ok COUNT"
//   sd-test-writer probe APP NAME TIMEOUT_MS   opens the dictionary; prints "ok <count>" or
//                                              "error <case>" and the elapsed milliseconds
//   sd-test-writer get APP NAME KEY            prints "ok <string value>", "absent" or "error <case>"
//   sd-test-writer move APP NAME               moves the dictionary from the Secret Service to the
//                                              Secret portal's files: "ok moved", "ok absent" or "error <case>"
//   sd-test-writer move-up APP NAME            moves it from the store below to the Secret Service (same output)
//   sd-test-writer move-down APP NAME          moves it from the Secret Service to the store below
//   sd-test-writer unlock                      the file store's unlock(): "ok" or "error <case>"
//   sd-test-writer forget                      the file store's forgetKey(): "ok"
//   sd-test-writer change-passphrase           the passphrase store's changePassphrase(): "ok <files>" or "error <case>"
//   sd-test-writer diagnose                    the file store's diagnosis of its rollback record:
//                                              "diagnosis none" or "diagnosis <problem>"
//   sd-test-writer choice                      the automatic store's choice: "ok <chosen> <ms>" or "error <case> <ms>"
//   sd-test-writer open-when-unlocked APP NAME  SecureDictionary.Async.openWhenUnlocked: "ok <count> <ms>" or
//                                              "error <case> <ms>"
//   sd-test-writer pound APP NAME THREADS      opens the dictionary, prints "ready", then on THREADS threads sets
//                                              one key each back to back, printing "call <thread> ok|<case> <ms>"
//                                              per call, until standard input ends
//   sd-test-writer scan APP COUNT MODE         the process a core-dump scan looks at (MemoryScan.swift)
//   sd-test-writer scan-memory-store APP MODE FILE...  the same, for an InMemoryKeyringStore of its
//                                              own holding each FILE (MemoryScan.swift)
//   sd-test-writer config-read APP NAME KEY    reads one configuration key through SecureDictionaryProvider,
//                                              prints "ready <reads>" and waits: the process a core scan
//                                              looks at (ConfigurationRead.swift)
//   sd-test-writer plant APP FILE...           each binary plist FILE becomes the dictionary named FILE's name
//   sd-test-writer mixed APP NAME              100 mixed operations, stopping for a daemon restart
//                                              (MixedOperations.swift): the process ConnectionCount counts
//   sd-test-writer hold-refresh APP NAME       holds a token refresh until a line on standard input
//                                              (HoldRefresh.swift): the other process of StoreContract
//   sd-test-writer refresh APP NAME PORT CALLS PACE_MS LOCKWAIT_MS MARGIN_MS sync|async
//                                              token refreshes against scripts/token-server.py
//                                              (TokenRefresh.swift): the processes TokenRefresh runs
//
// SD_TEST_WRITER_STORE picks the store: the Secret Service by default; "portal":
// EncryptedFileStore.secretPortal (the Secret portal's encrypted files); "credential": an
// EncryptedFileStore under the systemd credential SD_TEST_WRITER_CREDENTIAL (default
// "securedictionary") in SD_TEST_WRITER_FOLDER (default: the store's own); "passphrase": one
// under a passphrase read from descriptor SD_TEST_WRITER_PASSPHRASE_FD (else asked on the
// terminal), cached in the kernel keyring for SD_TEST_WRITER_CACHE_SECONDS ("none": not
// cached; default 900), scrypt N = 2^SD_TEST_WRITER_SCRYPT_LOG2N (default 17);
// "automatic": AutomaticStore, with the file store SD_TEST_WRITER_FILE_STORE
// ("credential" or "passphrase", as above; unset: none). SD_TEST_WRITER_TIMEOUT_MS sets the
// timeout of set, get and move. SD_TEST_WRITER_PROMPT_MS opts in to the keyring's dialogs
// (`unlock: .prompt(timeout:)`, waiting that long for the user). SD_TEST_WRITER_HARDEN=1:
// SecureDictionary.hardenProcess() first, its result on standard error.
import Foundation
import ProcessSpawning
import SecureDictionary
import SecureDictionaryFileStore
import SecureDictionaryTestSupport
import Synchronization

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("sd-test-writer: \(message)\n".utf8))
    exit(1)
}

let environment = ProcessInfo.processInfo.environment
if environment["SD_TEST_WRITER_HARDEN"] == "1" {
    FileHandle.standardError.write(Data("hardened: \(SecureDictionary.hardenProcess())\n".utf8))
}

/// The encrypted-file store named `kind` ("credential" or "passphrase"), configured from the
/// environment (`folder` replaces SD_TEST_WRITER_FOLDER).
func fileStore(_ kind: String?, folder: String? = environment["SD_TEST_WRITER_FOLDER"]) -> EncryptedFileStore? {
    switch kind {
    case "credential":
        let name = environment["SD_TEST_WRITER_CREDENTIAL"] ?? "securedictionary"
        return EncryptedFileStore(folderPath: folder, keySource: .systemdCredential(named: name))
    case "passphrase":
        let input: EncryptedFileStore.PassphraseInput =
            environment["SD_TEST_WRITER_PASSPHRASE_FD"].flatMap(Int32.init).map { .fileDescriptor($0) }
            ?? .terminal(timeout: .seconds(30))
        let cacheSetting = environment["SD_TEST_WRITER_CACHE_SECONDS"]
        let cache: EncryptedFileStore.PassphraseCache =
            cacheSetting == "none" ? .none : .kernelKeyring(timeout: .seconds(cacheSetting.flatMap(Int.init) ?? 900))
        let cost = EncryptedFileStore.PassphraseCost(log2N: environment["SD_TEST_WRITER_SCRYPT_LOG2N"].flatMap(Int.init) ?? 17)
        return EncryptedFileStore(folderPath: folder, keySource: .passphrase(input, cache: cache, cost: cost))
    default:
        return nil
    }
}

/// The store named by SD_TEST_WRITER_STORE.
let store: any KeyringStore =
    switch environment["SD_TEST_WRITER_STORE"] {
    case "portal": EncryptedFileStore.secretPortal
    case "credential", "passphrase": fileStore(environment["SD_TEST_WRITER_STORE"])!
    case "automatic": AutomaticStore(fileStore: fileStore(environment["SD_TEST_WRITER_FILE_STORE"]))
    default: SecretServiceStore.shared
    }

/// Milliseconds since `start`.
func milliseconds(since start: ContinuousClock.Instant) -> Int64 {
    (ContinuousClock.now - start).milliseconds
}

/// The options of every command; SD_TEST_WRITER_TIMEOUT_MS replaces the default timeout,
/// SD_TEST_WRITER_PROMPT_MS allows the keyring's dialogs.
func options(timeout: Duration? = nil) -> SecureDictionary.Options {
    let given = environment["SD_TEST_WRITER_TIMEOUT_MS"].flatMap(Int.init).map(Duration.milliseconds)
    let unlock = environment["SD_TEST_WRITER_PROMPT_MS"].flatMap(Int.init).map { milliseconds in
        SecureDictionary.Options.UnlockPolicy.prompt(timeout: .milliseconds(milliseconds))
    }
    return SecureDictionary.Options(timeout: timeout ?? given ?? .seconds(3), unlock: unlock ?? .never, store: store)
}

/// For `hygiene`: everything that touches the file stores' secrets, in a frame of its own.
@inline(never)
func exerciseFileStores(app: String, keeping kept: inout [AnyObject]) throws {
    let folder = environment["SD_TEST_WRITER_FOLDER"] ?? "/nonexistent"
    let stores = [
        EncryptedFileStore(folderPath: "\(folder)/credential", keySource: .systemdCredential()),
        EncryptedFileStore(
            folderPath: "\(folder)/passphrase",
            keySource: .passphrase(.fileDescriptor(0), cache: .none, cost: .init(log2N: 12))),
    ]
    for store in stores {
        let dictionary = try SecureDictionary(name: "hygiene", applicationID: app, options: .init(store: store))
        for index in 0..<5 { try dictionary.setValue(.integer(index), forKey: "k\(index)") }
        let again = try SecureDictionary(name: "hygiene", applicationID: app, options: .init(timeout: .seconds(3), store: store))
        try again.reload()
        kept += [store, dictionary, again]
    }
}

/// For `pound`: every thread writes back to back and reports each call as it ends; the
/// process exits when its standard input ends (a call still stuck then is abandoned).
func pound(app: String, name: String, threads: Int) throws {
    let dictionary = try SecureDictionary(name: name, applicationID: app, options: options())
    let output = NSLock()
    print("ready")
    fflush(nil)
    for thread in 0..<threads {
        Thread {
            for count in 0... {
                let start = ContinuousClock.now
                var outcome = "ok"
                do { try dictionary.setValue(.integer(count), forKey: "t\(thread)") } catch { outcome = caseName(error) }
                // Written at once: stdio's lock is taken by the main thread's readLine().
                let line = Data("call \(thread) \(outcome) \(milliseconds(since: start))\n".utf8)
                output.withLock { FileHandle.standardOutput.write(line) }
            }
        }.start()
    }
    while readLine() != nil {}
    exit(0)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else { fail("no command") }

do {
    switch command {
    case "write" where arguments.count == 6:
        let (app, name, prefix) = (arguments[1], arguments[2], arguments[3])
        guard let count = Int(arguments[4]), let increments = Int(arguments[5]) else { fail("bad numbers") }
        let options = options(timeout: .seconds(20))
        // Two instances of the same item, used alternately: they must share state.
        let instances = try (0..<2).map { _ in try SecureDictionary(name: name, applicationID: app, options: options) }
        var done = 0
        for index in 0..<max(count, increments) {
            let dictionary = instances[index % 2]
            if index < count {
                try dictionary.setValue(.integer(index), forKey: "\(prefix)-\(index)")
                if index % 10 == 9 { try dictionary.removeValue(forKey: "\(prefix)-\(index)") }
            }
            if index < increments {
                try dictionary.update { entries in
                    entries["counter"] = .integer((entries["counter"]?.integerValue ?? 0) + 1)
                }
                done += 1
            }
            usleep(UInt32.random(in: 0...2_000))  // jitter
        }
        print("ok \(done)")
    case "fill" where arguments.count == 5:
        // Sets PREFIX-0 … PREFIX-(COUNT-1) back to back, one write each: "ok COUNT" when every
        // write was acknowledged.
        guard let count = Int(arguments[4]) else { fail("bad count") }
        let dictionary = try SecureDictionary(
            name: arguments[2], applicationID: arguments[1], options: options(timeout: .seconds(20)))
        for index in 0..<count { try dictionary.setValue(.integer(index), forKey: "\(arguments[3])-\(index)") }
        print("ok \(count)")
    case "spread" where arguments.count == 4:
        guard let count = Int(arguments[2]), let folders = Int(arguments[3]), folders > 0,
            let base = environment["SD_TEST_WRITER_FOLDER"]
        else { fail("bad spread") }
        let stores = (0..<folders).map { fileStore(environment["SD_TEST_WRITER_STORE"], folder: "\(base)/f\($0)")! }
        for index in 0..<count {
            let options = SecureDictionary.Options(timeout: .seconds(20), store: stores[index % folders])
            try SecureDictionary(name: "d\(index)", applicationID: arguments[1], options: options).setValue(1, forKey: "k")
        }
        print("ok \(count)")
    case "set" where arguments.count == 5:
        let dictionary = try SecureDictionary(name: arguments[2], applicationID: arguments[1], options: options())
        try dictionary.setValue(.string(arguments[4]), forKey: arguments[3])
        print("ok \(Date().timeIntervalSince1970)")  // when the write returned, for delay figures
    case "probe" where arguments.count == 4:
        let timeout = Duration.milliseconds(Int(arguments[3]) ?? 3_000)
        let start = ContinuousClock.now
        do {
            let dictionary = try SecureDictionary(
                name: arguments[2], applicationID: arguments[1], options: options(timeout: timeout))
            print("ok \(dictionary.count)")
        } catch {
            print("error \(caseName(error)) \(milliseconds(since: start))")
        }
    case "get" where arguments.count == 4:
        do {
            let dictionary = try SecureDictionary(name: arguments[2], applicationID: arguments[1], options: options())
            print(dictionary[arguments[3]]?.stringValue.map { "ok \($0)" } ?? "absent")
        } catch {
            print("error \(caseName(error))")
        }
    case "move" where arguments.count == 3:
        do {
            let moved = try SecureDictionary.move(
                name: arguments[2], applicationID: arguments[1], from: SecretServiceStore.shared,
                to: EncryptedFileStore.secretPortal, timeout: options().timeout)
            print(moved ? "ok moved" : "ok absent")
        } catch {
            print("error \(caseName(error))")
        }
    case "move-up" where arguments.count == 3, "move-down" where arguments.count == 3:
        let (source, destination): (any KeyringStore, any KeyringStore) =
            command == "move-up" ? (store, SecretServiceStore.shared) : (SecretServiceStore.shared, store)
        do {
            let moved = try SecureDictionary.move(
                name: arguments[2], applicationID: arguments[1], from: source, to: destination, timeout: options().timeout)
            print(moved ? "ok moved" : "ok absent")
        } catch {
            print("error \(caseName(error))")
        }
    case "unlock" where arguments.count == 1:
        do {
            try (store as! EncryptedFileStore).unlock(timeout: options().timeout)
            print("ok")
        } catch {
            print("error \(caseName(error))")
        }
    case "forget" where arguments.count == 1:
        (store as! EncryptedFileStore).forgetKey()
        print("ok")
    case "change-passphrase" where arguments.count == 1:
        do {
            print("ok \(try (store as! EncryptedFileStore).changePassphrase(timeout: options().timeout))")
        } catch {
            print("error \(caseName(error))")
        }
    case "diagnose" where arguments.count == 1:
        print("diagnosis \((store as! EncryptedFileStore).diagnose().rollbackRecordProblem ?? "none")")
    case "choice" where arguments.count == 1:
        let start = ContinuousClock.now
        do {
            let choice = try (store as! AutomaticStore).choose(timeout: options().timeout)
            print("ok \(choice.chosen) \(milliseconds(since: start))")
        } catch {
            print("error \(caseName(error)) \(milliseconds(since: start))")
        }
    case "hygiene" where arguments.count == 3:
        // Uses a credential store and a passphrase store (passphrase: the first line of standard
        // input, not cached), writes and reads APP's dictionary in both, then with "forget"
        // forgets their keys and releases everything; prints "ready" and waits for a line. For
        // the core-dump scan of their secrets; "control" keeps everything, and the credential's
        // bytes in ordinary memory.
        var kept: [AnyObject] = []
        do {
            try exerciseFileStores(app: arguments[1], keeping: &kept)
        } catch {
            print("error \(caseName(error))")
            exit(1)
        }
        if arguments[2] == "forget" {
            for case let store as EncryptedFileStore in kept { store.forgetKey() }
            kept.removeAll()
        } else if let directory = environment["CREDENTIALS_DIRECTORY"],
            let copy = NSData(contentsOfFile: "\(directory)/securedictionary")
        {
            kept.append(copy)  // what a caller holding the credential in ordinary memory leaves
        }
        print("ready")
        fflush(nil)
        _ = readLine()
        withExtendedLifetime(kept) {}
    case "open-when-unlocked" where arguments.count == 3:
        let start = ContinuousClock.now
        let outcome = Mutex("")
        let done = DispatchSemaphore(value: 0)
        Task.detached {  // not on the main actor, whose thread waits below
            do {
                let dictionary = try await SecureDictionary.Async.openWhenUnlocked(
                    name: arguments[2], applicationID: arguments[1], options: options())
                outcome.withLock { $0 = "ok \(dictionary.count)" }
            } catch {
                outcome.withLock { $0 = "error \(caseName(error))" }
            }
            done.signal()
        }
        done.wait()
        print("\(outcome.withLock { $0 }) \(milliseconds(since: start))")
    case "pound" where arguments.count == 4:
        guard let threads = Int(arguments[3]), threads > 0 else { fail("bad thread count") }
        try pound(app: arguments[1], name: arguments[2], threads: threads)
    case "scan" where arguments.count == 4:
        guard let count = Int(arguments[2]) else { fail("bad count") }
        try MemoryScan.run(app: arguments[1], count: count, mode: arguments[3], options: options(timeout: .seconds(20)))
    case "scan-memory-store" where arguments.count >= 4:
        try MemoryScan.runInMemoryStore(app: arguments[1], mode: arguments[2], files: Array(arguments.dropFirst(3)))
    case "config-read" where arguments.count == 4:
        try ConfigurationRead.run(
            app: arguments[1], name: arguments[2], key: arguments[3], options: options(timeout: .seconds(20)))
    case "plant" where arguments.count >= 3:
        try MemoryScan.plant(app: arguments[1], files: Array(arguments.dropFirst(2)), options: options(timeout: .seconds(20)))
    case "mixed" where arguments.count == 3:
        try MixedOperations.run(app: arguments[1], name: arguments[2], options: options(timeout: .seconds(20)))
    case "refresh" where arguments.count == 9:
        try TokenRefresh.run(Array(arguments.dropFirst()), options: options())
    case "hold-refresh" where arguments.count == 3:
        HoldRefresh.run(app: arguments[1], name: arguments[2], options: options())
    case "hold" where arguments.count == 3:
        // Takes the item's writer lock and keeps it: prints "holding PID", then sleeps inside
        // update { } until killed. For the test that stops a lock holder.
        let dictionary = try SecureDictionary(
            name: arguments[2], applicationID: arguments[1], options: options(timeout: .seconds(30)))
        try dictionary.update { _ in
            print("holding \(getpid())")
            fflush(nil)
            sleep(600)
        }
    default:
        fail(
            "usage: write APP NAME PREFIX COUNT INCREMENTS | set APP NAME KEY VALUE | probe APP NAME TIMEOUT_MS | "
                + "spread APP COUNT FOLDERS | get APP NAME KEY | move APP NAME | move-up APP NAME | move-down APP NAME | hold APP NAME | unlock | forget | "
                + "change-passphrase | diagnose | choice | open-when-unlocked APP NAME | pound APP NAME THREADS | mixed APP NAME | "
                + "refresh APP NAME PORT CALLS PACE_MS LOCKWAIT_MS MARGIN_MS sync|async"
        )
    }
} catch {
    fail("\(error)")
}
