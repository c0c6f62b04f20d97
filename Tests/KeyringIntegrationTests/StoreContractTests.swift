import Foundation
import SecureDictionaryTestSupport
import Synchronization
import Testing

@testable import SecureDictionary
@testable import SecureDictionaryFileStore

#if canImport(Glibc)
    import Glibc
#endif

extension KeyringIntegration {
    /// design.md invariant 9, "one contract for every store": each clause is one test, run
    /// over every store it applies to (the model: swift-configuration's `ProviderCompatTest`).
    /// The other process is `sd-test-writer` with the same store. A clause a store cannot keep
    /// is named in ``ContractStore/Kind/exclusion(_:)`` (and in that store's docs), never
    /// skipped in silence.
    ///
    /// The Secret Service store runs on every provider of `scripts/test`; the encrypted-file
    /// store (under a real `systemd-creds` credential) and the in-memory store do not depend
    /// on the provider, so they run once, with gnome-keyring. The encrypted-file store under
    /// the Secret portal's key runs where the lab has the portal (gnome-keyring with
    /// `--portal`, required in CI), in the clauses with another process, which is then a
    /// sandboxed app: it keeps each of them (lock scope, `lockWait`, a holder killed, refresh
    /// once, deadlines, changes), its holder named by its pid outside the sandbox's pid
    /// namespace. `lockWaitZeroTakesAFreeLock` has no other process: this process's side of
    /// the portal's files is the credential files' engine under another secret.
    @Suite struct StoreContract {
        static let stores: [ContractStore.Kind] =
            PrivateKeyring.provider == "gnome-keyring" ? [.secretService, .credentialFiles, .inMemory] : [.secretService]
        /// With the portal's files where the lab offers the portal.
        static let storesWithAnotherProcess =
            stores
            + (PrivateKeyring.provider == "gnome-keyring" && (PrivateKeyring.hasPortal || PrivateKeyring.required)
                ? [.portalFiles] : [])

        /// The error `body` throws, or `nil`.
        static func error(_ body: () throws -> Void) -> (any Error)? {
            do { try body() } catch { return error }
            return nil
        }

        /// Whether `error` is `lockHeld` naming `pid`.
        static func isLockHeld(_ error: (any Error)?, by pid: Int) -> Bool {
            guard case SecureDictionaryError.lockHeld(let named, _)? = error else { return false }
            return named == pid
        }

        // MARK: Lock scope: one item, never its neighbours

        /// A refresh of another process holds its item: a write of that item ends at its
        /// deadline naming the holder, while writes of the same folder's or keyring's other
        /// dictionaries (another application's included) go ahead. Before, on the file store,
        /// the refresh held the whole folder's lock, and the neighbours failed after their 2 s
        /// with "held this dictionary's writer lock".
        @Test(.timeLimit(.minutes(1)), arguments: storesWithAnotherProcess)
        func aRefreshHoldsItsItemAndNeverItsNeighbours(_ kind: ContractStore.Kind) throws {
            let store = try ContractStore(kind)
            try store.open("held").setValue("before", forKey: "k")
            // Opened first: in this process, a new instance's load waits for the refresh too.
            let held = try store.open("held", timeout: .milliseconds(300))
            let holder = try store.holdRefresh("held")
            defer { holder.finish() }

            var latencies: [String: Duration] = [:]
            for (name, app) in [("neighbour", store.app), ("other-app", "\(store.app).other")] {
                let neighbour = try store.open(name, app: app, timeout: .seconds(2))
                let started = ContinuousClock.now
                do {
                    try neighbour.setValue("written", forKey: "k")
                } catch {
                    Issue.record("\(kind): a write of '\(name)' failed while another item's refresh held its lock: \(error)")
                }
                latencies[name] = ContinuousClock.now - started
            }
            let during = Self.error { try held.setValue("during", forKey: "k") }
            #expect(Self.isLockHeld(during, by: holder.pid), "\(kind): \(String(describing: during))")
            holder.finish()
            #expect(holder.outcome == "ok \(holder.token)", "\(kind)")
            print("store contract, lock scope (\(kind)): neighbours written during a held refresh in \(latencies)")
        }

        // MARK: lockWait: zero, short, held, holder killed

        /// `lockWait: .zero` tries once: a free lock is taken. Before, on the keyring, it was
        /// `timedOut` at 0 ms: the wait ended before the bus could answer.
        @Test(.timeLimit(.minutes(1)), arguments: stores)
        func lockWaitZeroTakesAFreeLock(_ kind: ContractStore.Kind) throws {
            let store = try ContractStore(kind)
            let tokens = try store.open("tokens")
            let token = try tokens.value(forKey: "token", lockWait: .zero, refreshingIf: { $0["token"] == nil }) {
                $0["token"] = "refreshed"
            }
            #expect(token == "refreshed", "\(kind)")
        }

        /// `lockWait: .zero` and a short one, while another caller refreshes: `lockHeld`
        /// naming the holder, never `timedOut`, and nothing refreshed. Before, on the keyring,
        /// both were `timedOut` (nobody named).
        @Test(.timeLimit(.minutes(1)), arguments: storesWithAnotherProcess)
        func aShortOrZeroLockWaitNamesTheHolder(_ kind: ContractStore.Kind) throws {
            let store = try ContractStore(kind)
            let tokens = try store.open("tokens")
            let holder = try store.holdRefresh("tokens")
            defer { holder.finish() }
            for wait in [Duration.zero, .milliseconds(200)] {
                let started = ContinuousClock.now
                let error = Self.error {
                    _ = try tokens.value(forKey: "token", lockWait: wait, refreshingIf: { _ in true }) { _ in
                        Issue.record("\(kind): refreshed while another caller held the lock")
                    }
                }
                #expect(Self.isLockHeld(error, by: holder.pid), "\(kind), lockWait \(wait): \(String(describing: error))")
                let outcome = error.map { caseName($0) } ?? "no error"
                print("store contract, lockWait \(wait) (\(kind)): \(outcome) after \(ContinuousClock.now - started)")
            }
        }

        /// A holder killed (SIGKILL) in its refresh frees the lock at once: a waiter bounded by
        /// 10 s refreshes itself, long before its bound.
        @Test(.timeLimit(.minutes(1)), arguments: storesWithAnotherProcess)
        func aHolderKilledInItsRefreshFreesTheLock(_ kind: ContractStore.Kind) throws {
            if let reason = kind.exclusion(.holderKilled) { return print("store contract (\(kind)): \(reason)") }
            let store = try ContractStore(kind)
            let tokens = try store.open("tokens")
            let holder = try store.holdRefresh("tokens")
            defer { holder.finish() }
            let waiter = WaitingRefresh(tokens) { $0["token"] = "after the kill" }
            let killed = ContinuousClock.now
            holder.kill()
            let outcome = waiter.outcome()
            #expect(try outcome?.get() == "after the kill", "\(kind): \(String(describing: outcome))")
            print("store contract, holder killed (\(kind)): the waiter refreshed \(ContinuousClock.now - killed) after the kill")
        }

        // MARK: Refresh: once, whoever asks

        /// Another process refreshes while this one waits for the lock: this one returns the
        /// other's token and does not refresh.
        @Test(.timeLimit(.minutes(1)), arguments: storesWithAnotherProcess)
        func aWaiterTakesTheRefreshAnotherCallerMade(_ kind: ContractStore.Kind) throws {
            let store = try ContractStore(kind)
            let tokens = try store.open("tokens")
            let holder = try store.holdRefresh("tokens")
            let refreshed = Mutex(false)
            let waiter = WaitingRefresh(tokens) { entries in
                refreshed.withLock { $0 = true }
                entries["token"] = "refreshed twice"
            }
            holder.finish()
            let outcome = waiter.outcome()
            #expect(try outcome?.get() == .string(holder.token), "\(kind): \(String(describing: outcome))")
            #expect(!refreshed.withLock { $0 }, "\(kind): refreshed again")
        }

        // MARK: Deadlines

        /// Every call ends by its deadline, waits for other processes included: an `update { }`
        /// of an item whose refresh another caller holds throws `lockHeld` at its timeout.
        @Test(.timeLimit(.minutes(1)), arguments: storesWithAnotherProcess)
        func aWriteBehindAHeldRefreshEndsAtItsDeadline(_ kind: ContractStore.Kind) throws {
            let store = try ContractStore(kind)
            let writer = try store.open("tokens", timeout: .milliseconds(500))
            let holder = try store.holdRefresh("tokens")
            defer { holder.finish() }
            let started = ContinuousClock.now
            let error = Self.error { try writer.update { $0["k"] = "v" } }
            #expect(Self.isLockHeld(error, by: holder.pid), "\(kind): \(String(describing: error))")
            let elapsed = ContinuousClock.now - started
            #expect(elapsed < .seconds(3), "\(kind): the 500 ms call took \(elapsed)")  // a hang, not a figure
            print("store contract, deadline (\(kind)): a 500 ms write behind a held refresh ended after \(elapsed)")
        }

        // MARK: Changes, whoever made them

        // MARK: Memory: no key or value in a core

        /// A process that opened the store's dictionaries (planted by another process, then
        /// replaced by a newer version) holds none of their keys or values in what a core of
        /// it would hold, whether it keeps them unread or released them; a control that copies
        /// every value out finds them all, or the scan proves nothing (``MemoryScan``). The
        /// library's memory does not depend on the provider: this clause runs with
        /// gnome-keyring only.
        @Test(
            .timeLimit(.minutes(5)),
            .enabled(if: PrivateKeyring.provider == "gnome-keyring", "the library's memory is the same on every provider"),
            arguments: storesWithAnotherProcess)
        func noKeyOrValueIsInACoreLoadedOrReleased(_ kind: ContractStore.Kind) throws {
            let scan = try MemoryScan()
            switch kind {
            case .secretService: try scan.scanTheKeyring()
            case .credentialFiles: try scan.scanTheEncryptedFileStore()
            case .inMemory: try scan.scanTheInMemoryStore()
            case .portalFiles: try scan.scanThePortalStore()
            }
        }

        /// A write by another process reaches `changes()`, without polling. Before, the
        /// encrypted-file stores delivered nothing (60 writes by `secure-dict`, no element).
        @Test(.timeLimit(.minutes(1)), arguments: storesWithAnotherProcess)
        func aChangeByAnotherProcessReachesChanges(_ kind: ContractStore.Kind) async throws {
            if let reason = kind.exclusion(.changeByAnotherProcess) { return print("store contract (\(kind)): \(reason)") }
            let store = try ContractStore(kind)
            let dictionary = try store.open("observed")
            var delays: [Duration] = []
            for round in 0..<3 {
                let value = "v\(round)"
                let listener = Task { () -> (SecureDictionary.Change?, Double) in
                    for await change in dictionary.changes() { return (change, Date().timeIntervalSince1970) }
                    return (nil, 0)
                }
                try await Task.sleep(for: .milliseconds(100))  // the listener subscribed
                let other = try store.childWrite("observed", key: "x", value: value)
                // The writer printed the wall-clock time right after its write returned.
                let written = Double(other.split(separator: " ").last ?? "") ?? 0
                let watchdog = Task {
                    try await Task.sleep(for: .seconds(10))
                    listener.cancel()
                }
                let (change, arrived) = await withTaskCancellationHandler {
                    await listener.value
                } onCancel: {
                    listener.cancel()
                }
                watchdog.cancel()
                #expect(
                    change?.key == "x" && change?.newValue == .string(value),
                    "\(kind), round \(round): \(String(describing: change))")
                delays.append(.microseconds(Int((arrived - written) * 1_000_000)))
            }
            print("store contract, change by another process (\(kind)): delays \(delays)")
        }
    }
}

/// One store of the contract: how this process opens it, and how `sd-test-writer` does.
struct ContractStore {
    enum Kind: String, Sendable, CustomTestStringConvertible {
        /// The Secret Service of the provider under test (`SecretServiceStore`).
        case secretService
        /// `EncryptedFileStore` under a `systemd-creds` credential.
        case credentialFiles
        /// `EncryptedFileStore(keySource: .secretPortal)`, the other process a sandboxed app
        /// that gets its key from xdg-desktop-portal (`scripts/with-private-keyring --portal`).
        case portalFiles
        /// `InMemoryKeyringStore`.
        case inMemory

        var testDescription: String { rawValue }

        enum Clause { case holderKilled, changeByAnotherProcess }

        /// Why this store cannot keep `clause`, or `nil` when it keeps it. Each reason is in
        /// the store's docs too (`InMemoryKeyringStore`).
        func exclusion(_ clause: Clause) -> String? {
            guard self == .inMemory else { return nil }
            switch clause {
            case .holderKilled, .changeByAnotherProcess:
                return "excluded: no other process reaches an InMemoryKeyringStore (its items live in this process)"
            }
        }
    }

    let kind: Kind
    let store: any KeyringStore
    /// What `sd-test-writer` needs to open the same store; `nil` for the in-memory store.
    let childEnvironment: [String: String]?
    /// The sandboxed app's data folder (`XDG_DATA_HOME`), for the portal's files.
    private var sandboxData: String?
    let app = "it.contract.\(UUID().uuidString)"

    init(_ kind: Kind) throws {
        self.kind = kind
        switch kind {
        case .secretService:
            store = SecretServiceStore()
            childEnvironment = [:]
        case .credentialFiles:
            // The credential made and handed over as FileStoreProcesses does. This process
            // opens the folder with the credential's bytes (the same files, the same engine:
            // it has no $CREDENTIALS_DIRECTORY of its own); the other process is a real
            // EncryptedFileStore(keySource: .systemdCredential()).
            let processes = try FileStoreProcesses()
            let key = try processes.makeCredential(in: "\(processes.base)/credentials")
            var environment = processes.credentialEnvironment("\(processes.base)/credentials")
            let folder = "\(processes.base)/files"
            environment["SD_TEST_WRITER_FOLDER"] = folder
            store = EncryptedFileStore(folderPath: folder, keySource: .systemdCredential()) { _ in SecretBytes(copying: key) }
            childEnvironment = environment
        case .portalFiles:
            // The portal serves sandboxed apps only: this process opens the app's folder with
            // the secret the portal gave the app (the same files, the same engine); the other
            // process is the app, in its sandbox, a real EncryptedFileStore(keySource: .secretPortal).
            let data = try TemporaryFolder.create("sd-contract-portal")
            let key = try PortalApp.secret.get()
            store = EncryptedFileStore(folderPath: "\(data)/securedictionary") { _ in SecretBytes(copying: key) }
            childEnvironment = ["SD_TEST_WRITER_STORE": "portal"]
            sandboxData = data
        case .inMemory:
            store = InMemoryKeyringStore()
            childEnvironment = nil
        }
    }

    func open(_ name: String, app: String? = nil, timeout: Duration = .seconds(3)) throws -> SecureDictionary {
        try SecureDictionary(name: name, applicationID: app ?? self.app, options: .init(timeout: timeout, store: store))
    }

    /// `sd-test-writer set` in another process; its output ("ok <unix time>").
    func childWrite(_ name: String, key: String, value: String) throws -> String {
        let (program, arguments, environment) = writer(["set", app, name, key, value])
        let output = try KeyringHarness.run(program, arguments, environment: environment)
        #expect(output.succeeded, "\(output)")
        return output.trimmedText
    }

    /// How `sd-test-writer ARGUMENTS` runs as the other process: for the portal's files, as
    /// the sandboxed app (`scripts/sandbox-run`).
    private func writer(_ arguments: [String]) -> (program: String, arguments: [String], environment: [String: String]) {
        guard let sandboxData else { return (KeyringHarness.writer, arguments, childEnvironment ?? [:]) }
        let setting = (childEnvironment ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return (
            PrivateKeyring.packageRoot.appendingPathComponent("scripts/sandbox-run").path,
            ["--app-id", PortalApp.id, "--data", sandboxData, "--", "/usr/bin/env"] + setting + [KeyringHarness.writer]
                + arguments, [:]
        )
    }

    /// A refresh of `name`'s "token" that holds the item's locks until ``RefreshHolder/finish()``:
    /// in another process, or (in-memory) on a thread of this one.
    func holdRefresh(_ name: String) throws -> any RefreshHolder {
        if childEnvironment != nil {
            let (program, arguments, environment) = writer(["hold-refresh", app, name])
            let child = try LiveChild(program, arguments, environment: environment)
            try #require(child.waitUntil(timeout: .seconds(30)) { $0.first?.hasPrefix("holding ") == true }, "\(child.lines)")
            return ChildRefresh(child: child)
        }
        return try ThreadRefresh(try open(name))
    }
}

/// A refresh of "token" that finds it missing, bounded by a `lockWait` of 10 s, on a thread of
/// its own: made once it is on its way to the lock (its `isStale` ran on the entries in memory).
final class WaitingRefresh: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let result = Mutex<Result<SecureDictionary.Value?, any Error>?>(nil)

    init(_ tokens: SecureDictionary, refresh: @escaping @Sendable (inout SecureDictionary.Entries) -> Void) {
        let waiting = DispatchSemaphore(value: 0)
        Thread { [self] in
            let outcome = Result {
                try tokens.value(
                    forKey: "token", lockWait: .seconds(10),
                    refreshingIf: { entries in
                        waiting.signal()
                        return entries["token"] == nil
                    }, refresh: refresh)
            }
            result.withLock { $0 = outcome }
            done.signal()
        }.start()
        waiting.wait()
    }

    /// What the refresh returned or threw, once it ended (waited for up to 20 s: `nil`, and
    /// an issue recorded, when it did not end).
    func outcome() -> Result<SecureDictionary.Value?, any Error>? {
        #expect(done.wait(timeout: .now() + 20) == .success)
        return result.withLock { $0 }
    }
}

/// A refresh holding an item's locks.
protocol RefreshHolder {
    /// The process that holds them, as this process sees it.
    var pid: Int { get }
    /// The token the refresh writes: "from PID", the pid as the holder sees itself (in a
    /// sandbox, its pid namespace's).
    var token: String { get }
    /// Lets the refresh write and return; waits for it.
    func finish()
    /// Kills the holding process (SIGKILL).
    func kill()
    /// "ok TOKEN" or "error CASE", once finished.
    var outcome: String { get }
}

/// `sd-test-writer hold-refresh`, holding (it printed "holding PID").
final class ChildRefresh: RefreshHolder, Sendable {
    let child: LiveChild
    let pid: Int
    let token: String
    /// `LiveChild.finish()` waits for the exit once: a second call would wait forever.
    private let ended = Atomic<Bool>(false)

    init(child: LiveChild) {
        self.child = child
        pid = PortalApp.process(named: "sd-test-writer", from: child.pid)
        token = "from " + (child.lines.first?.dropFirst("holding ".count) ?? "")
    }

    func finish() {
        guard !ended.exchange(true, ordering: .relaxed) else { return }
        try? child.send("go")
        _ = child.waitUntil(timeout: .seconds(20)) { $0.count >= 2 }
        child.finish()
    }

    func kill() {
        guard !ended.exchange(true, ordering: .relaxed) else { return }
        _ = Glibc.kill(Int32(pid), SIGKILL)
        child.finish()
    }

    var outcome: String { child.lines.dropFirst().first ?? "none" }
}

/// A refresh of this process, on a thread of its own.
final class ThreadRefresh: RefreshHolder, Sendable {
    private let go = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let result = Mutex("none")
    private let finished = Mutex(false)

    init(_ dictionary: SecureDictionary) throws {
        let holding = DispatchSemaphore(value: 0)
        Thread { [self] in
            let outcome: String
            do {
                let token = try dictionary.value(forKey: "token", refreshingIf: { _ in true }) { entries in
                    holding.signal()
                    go.wait()
                    entries["token"] = .string("from \(getpid())")
                }
                outcome = "ok \(token?.stringValue ?? "none")"
            } catch {
                outcome = "error \(caseName(error))"
            }
            result.withLock { $0 = outcome }
            ended.signal()
        }.start()
        try #require(holding.wait(timeout: .now() + 30) == .success, "the refresh did not start")
    }

    var pid: Int { Int(getpid()) }
    var token: String { "from \(getpid())" }

    func finish() {
        guard
            finished.withLock({ finished in
                defer { finished = true }
                return !finished
            })
        else { return }
        go.signal()
        ended.wait()
    }

    func kill() { Issue.record("a refresh of this process cannot be killed alone") }

    var outcome: String { result.withLock { $0 } }
}
