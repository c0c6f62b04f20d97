import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

#if canImport(Glibc)
    import Glibc
#endif

extension KeyringIntegration {
    /// Across processes: `value(forKey:lockWait:refreshingIf:refresh:)` in 8
    /// `sd-test-writer refresh` processes against `scripts/token-server.py`, which rotates
    /// refresh tokens and rejects a spent one, as many OAuth providers do. On
    /// the keyring (its writer lock is the session bus name) and on the encrypted-file store
    /// (its folder lock; runs once, with gnome-keyring).
    @Suite struct TokenRefresh {
        /// Half the processes use the sync form, half the async one.
        static func form(_ index: Int) -> String { index.isMultiple(of: 2) ? "sync" : "async" }

        /// The file store needs no keyring: its tests run once, with gnome-keyring.
        static let onlyWithGnomeKeyring = PrivateKeyring.provider == "gnome-keyring"

        @Test(.timeLimit(.minutes(3))) func eightProcessesRefreshOncePerExpiryAndNoneIsRejected() throws {
            try Self.refreshOncePerExpiry(TokenRefreshWorld(test: TestItem("oauth")))
        }

        @Test(.timeLimit(.minutes(3))) func aHolderKilledInItsRefreshDelaysTheOthersByAtMostTheirBound() throws {
            try Self.killedHolder(TokenRefreshWorld(test: TestItem("oauth-kill")))
        }

        @Test(.timeLimit(.minutes(3)), .enabled(if: Self.onlyWithGnomeKeyring, "runs once, with gnome-keyring"))
        func eightProcessesOfTheFileStoreRefreshOncePerExpiryAndNoneIsRejected() throws {
            try Self.refreshOncePerExpiry(try TokenRefreshWorld.fileStore(TestItem("oauth-files")))
        }

        @Test(.timeLimit(.minutes(3)), .enabled(if: Self.onlyWithGnomeKeyring, "runs once, with gnome-keyring"))
        func aHolderOfTheFileStoreKilledInItsRefreshDelaysTheOthersByAtMostTheirBound() throws {
            try Self.killedHolder(try TokenRefreshWorld.fileStore(TestItem("oauth-files-kill")))
        }

        /// 8 processes × 20 calls, 50 ms apart, tokens good for 0.4 s, stale 0.15 s before they
        /// expire: a refresh every 0.25 s or more, so the run spans several expiries.
        static func refreshOncePerExpiry(_ world: TokenRefreshWorld) throws {
            let server = try TokenServer(lifetime: 0.4, margin: 0.15)
            defer { server.stop() }
            let started = ContinuousClock.now
            let processes = try (0..<8).map { index in
                try world.caller(["\(server.port)", "20", "50", "10000", "150", form(index)])
            }
            defer { for process in processes { process.finish() } }
            var calls: [String] = []
            var refreshes = 0
            for process in processes {
                #expect(process.waitUntil(timeout: .seconds(150)) { $0.last?.hasPrefix("done ") == true }, "\(process.lines)")
                calls += process.lines.filter { $0.hasPrefix("call ") }
                refreshes += process.lines.last.flatMap { Int($0.dropFirst("done refreshes=".count)) } ?? 0
            }
            let elapsed = ContinuousClock.now - started
            let stats = try server.stats()
            let failed = calls.filter { !$0.split(separator: " ")[2].elementsEqual("ok") }
            #expect(calls.count == 160 && failed.isEmpty, "\(calls.count) calls; failed: \(failed)")
            #expect(stats.rejected == 0, "refreshes with a spent refresh token")
            #expect(stats.early == 0, "refreshes of a token another process had refreshed")
            #expect(stats.refreshes == refreshes, "the server counted \(stats.refreshes), the processes \(refreshes)")
            #expect(stats.refreshes >= 2, "the run spanned \(stats.refreshes) expiries")
            let tokens = Set(calls.map { String($0.split(separator: " ")[3]) })
            #expect(tokens.isSubset(of: stats.issued), "tokens the server never issued: \(tokens.subtracting(stats.issued))")
            let slowest = calls.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.max() ?? 0
            print(
                "token refresh (\(world.label)): 8 processes × 20 calls in \(elapsed): \(stats.refreshes) refreshes, "
                    + "\(stats.rejected) rejected, \(stats.early) early, \(tokens.count) tokens seen, slowest call \(slowest) ms")
        }

        /// The holder's refresh is held by the server. Waiters bounded by 1 s give up naming it;
        /// then the holder is killed (SIGKILL) while 7 waiters bounded by 5 s wait: each gets
        /// the token the next holder refreshed, within its bound, and r0, never spent by the
        /// killed holder (the server held its request before looking at it), is spent once.
        static func killedHolder(_ world: TokenRefreshWorld) throws {
            let bound = 5_000
            let server = try TokenServer(lifetime: 3600, margin: 0.2)
            defer { server.stop() }
            server.send("hold")
            let holder = try world.caller(["\(server.port)", "1", "0", "30000", "200", "sync"])
            defer { holder.finish() }
            try #require(server.child.waitUntil(timeout: .seconds(60)) { $0.contains("held r0") }, "\(server.child.lines)")

            // Hung: the others give up after their bound, naming the holder.
            let impatient = try (0..<3).map { try world.caller(["\(server.port)", "1", "0", "1000", "200", form($0)]) }
            var gaveUp: [Int] = []
            for waiter in impatient {
                #expect(waiter.waitUntil(timeout: .seconds(60)) { $0.last?.hasPrefix("done ") == true })
                let call = waiter.lines.first { $0.hasPrefix("call ") } ?? "none"
                #expect(call.hasPrefix("call 0 error lockHeld pid=\(holder.pid) "), "\(call)")
                gaveUp += call.split(separator: " ").last.flatMap { Int($0) }.map { [$0] } ?? []
                waiter.finish()
            }

            // Killed, once every waiter found the token stale and went for the lock: the lock
            // goes with the process.
            let waiters = try (0..<7).map { try world.caller(["\(server.port)", "1", "0", "\(bound)", "200", form($0)]) }
            for waiter in waiters { #expect(waiter.waitUntil(timeout: .seconds(60)) { $0.contains("stale") }) }
            let killed = ContinuousClock.now
            kill(holder.pid, SIGKILL)
            var longest = 0
            for waiter in waiters {
                #expect(waiter.waitUntil(timeout: .seconds(60)) { $0.last?.hasPrefix("done ") == true })
                let call = (waiter.lines.first { $0.hasPrefix("call ") } ?? "none").split(separator: " ")
                #expect(call.count == 5 && call[2] == "ok" && call[3] == "a1", "\(call)")
                let milliseconds = call.last.flatMap { Int($0) } ?? .max
                #expect(milliseconds <= bound, "waited \(milliseconds) ms, bound \(bound) ms")
                longest = max(longest, milliseconds)
            }
            let afterKill = ContinuousClock.now - killed
            for waiter in waiters { waiter.finish() }
            let stats = try server.stats()
            #expect(stats.refreshes == 1 && stats.rejected == 0 && stats.early == 0, "\(stats)")
            print(
                "token refresh, holder killed (\(world.label)): 7 waiters done \(afterKill) after the kill, "
                    + "longest call \(longest) ms (bound \(bound) ms); \(stats.refreshes) refresh, \(stats.rejected) rejected; "
                    + "bounded by 1000 ms, waiters gave up naming the holder after \(gaveUp) ms")
        }
    }
}

/// Where the processes keep the tokens: the keyring, or an encrypted-file store.
struct TokenRefreshWorld {
    let test: TestItem
    var environment: [String: String] = [:]
    /// A line each process reads first (the file store's passphrase).
    var firstLine: String?
    var label = PrivateKeyring.provider

    /// A passphrase-protected file store in a folder of its own, made by one process first
    /// (so that the 8 do not race to make its key).
    static func fileStore(_ test: TestItem) throws -> TokenRefreshWorld {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sd-refresh-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let environment = [
            "SD_TEST_WRITER_STORE": "passphrase", "SD_TEST_WRITER_FOLDER": folder, "SD_TEST_WRITER_PASSPHRASE_FD": "0",
            "SD_TEST_WRITER_CACHE_SECONDS": "none", "SD_TEST_WRITER_SCRYPT_LOG2N": "12",
        ]
        let world = TokenRefreshWorld(test: test, environment: environment, firstLine: "token refresh test", label: "file store")
        let made = try ChildProcess.run(
            KeyringHarness.writer, ["set", test.appID, test.name, "made", "1"], input: Data("token refresh test\n".utf8),
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new })
        try #require(made.succeeded, "\(made)")
        return world
    }

    /// `sd-test-writer refresh APP NAME` with `arguments`, running.
    func caller(_ arguments: [String]) throws -> LiveChild {
        let child = try LiveChild(
            KeyringHarness.writer, ["refresh", test.appID, test.name] + arguments, environment: environment)
        if let firstLine { try child.send(firstLine) }
        return child
    }
}

/// `scripts/token-server.py`, running.
struct TokenServer {
    struct Stats {
        var refreshes = 0
        var rejected = 0
        var early = 0
        var issued: Set<String> = []
    }

    let child: LiveChild
    let port: UInt16

    init(lifetime: Double, margin: Double) throws {
        let script = PrivateKeyring.packageRoot.appendingPathComponent("scripts/token-server.py").path
        child = try LiveChild("/usr/bin/python3", [script, "--lifetime", "\(lifetime)", "--margin", "\(margin)"])
        try #require(
            child.waitUntil(timeout: .seconds(30)) { $0.first?.hasPrefix("port ") == true }, "token-server.py did not start")
        port = try #require(child.lines.first.flatMap { UInt16($0.dropFirst("port ".count)) })
    }

    func send(_ command: String) { try? child.send(command) }

    func stats() throws -> Stats {
        let before = child.lines.filter { $0.hasPrefix("stats ") }.count
        send("stats")
        try #require(child.waitUntil(timeout: .seconds(30)) { $0.filter { $0.hasPrefix("stats ") }.count > before })
        var stats = Stats()
        for field in (child.lines.last { $0.hasPrefix("stats ") } ?? "").split(separator: " ").dropFirst() {
            let pair = field.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            switch pair[0] {
            case "refreshes": stats.refreshes = Int(pair[1]) ?? -1
            case "rejected": stats.rejected = Int(pair[1]) ?? -1
            case "early": stats.early = Int(pair[1]) ?? -1
            case "issued": stats.issued = Set(pair[1].split(separator: ",").map(String.init))
            default: break
            }
        }
        return stats
    }

    func stop() { child.finish() }
}
