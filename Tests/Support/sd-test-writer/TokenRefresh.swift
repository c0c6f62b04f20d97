import Dispatch
import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `sd-test-writer refresh APP NAME PORT CALLS PACE_MS LOCKWAIT_MS MARGIN_MS sync|async`: the
/// process TokenRefresh runs 8 of. CALLS calls of `value(forKey:lockWait:refreshingIf:refresh:)`
/// for "accessToken" (the sync or the async form), PACE_MS apart, against the fixture token
/// server `scripts/token-server.py` on PORT: stale when the token is missing or expires within
/// MARGIN_MS; the refresh spends the stored refresh token (r0 before the first one) and sets
/// the access token, the refresh token and the expiry the server answers. Prints "ready" once
/// the dictionary is open, "stale" each time it finds the token stale, then per call "call I ok TOKEN MS" or "call I error CASE MS
/// [pid=PID]", then "done refreshes=N" (the refreshes this process made).
enum TokenRefresh {
    struct Rejected: Error {}

    /// The refreshes this process made.
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// The server's answer to `refresh token`: the entries it sets.
    static func exchange(_ token: String, port: UInt16) throws -> (access: String, refresh: String, expires: Date) {
        let words = try ask("refresh \(token)", port: port).split(separator: " ").map(String.init)
        guard words.count == 4, words[0] == "ok", let expires = Double(words[3]) else { throw Rejected() }
        return (words[1], words[2], Date(timeIntervalSince1970: expires))
    }

    /// One line to the server on 127.0.0.1:`port`, and its one-line answer.
    static func ask(_ line: String, port: UInt16) throws -> String {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EIO) }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
        let request = Array((line + "\n").utf8)
        guard write(socket, request, request.count) == request.count else { throw POSIXError(.EIO) }
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while read(socket, &byte, 1) == 1, byte != UInt8(ascii: "\n") { answer.append(byte) }
        return String(decoding: answer, as: UTF8.self)
    }

    static func run(_ arguments: [String], options: SecureDictionary.Options) throws {
        guard arguments.count == 8, let port = UInt16(arguments[2]), let calls = Int(arguments[3]),
            let pace = Int(arguments[4]), let lockWait = Int(arguments[5]), let margin = Int(arguments[6])
        else { fail("usage: refresh APP NAME PORT CALLS PACE_MS LOCKWAIT_MS MARGIN_MS sync|async") }
        let tokens = try SecureDictionary(name: arguments[1], applicationID: arguments[0], options: options)
        let refreshes = Counter()
        let isStale = { @Sendable (entries: SecureDictionary.Entries) -> Bool in
            var stale = true
            if entries["accessToken"] != nil, let expires = entries["expiresAt"]?.dateValue {
                stale = expires.timeIntervalSinceNow * 1000 <= Double(margin)
            }
            if stale {
                print("stale")  // on its way to the lock, or holding it
                fflush(nil)
            }
            return stale
        }
        let refresh = { @Sendable (entries: inout SecureDictionary.Entries) throws in
            refreshes.value.add(1, ordering: .relaxed)
            let new = try exchange(entries["refreshToken"]?.stringValue ?? "r0", port: port)
            entries["accessToken"] = .string(new.access)
            entries["refreshToken"] = .string(new.refresh)
            entries["expiresAt"] = .date(new.expires)
        }
        print("ready")
        fflush(nil)
        for call in 0..<calls {
            if call > 0 { usleep(UInt32(pace) * 1000) }  // an app using its token now and then
            let start = ContinuousClock.now
            let outcome: String
            do {
                let token: SecureDictionary.Value?
                if arguments[7] == "async" {
                    token = try blocking {
                        try await tokens.async.value(
                            forKey: "accessToken", lockWait: .milliseconds(lockWait), refreshingIf: isStale,
                            refresh: { entries in try refresh(&entries) })
                    }
                } else {
                    token = try tokens.value(
                        forKey: "accessToken", lockWait: .milliseconds(lockWait), refreshingIf: isStale, refresh: refresh)
                }
                outcome = "ok \(token?.stringValue ?? "none")"
            } catch SecureDictionaryError.lockHeld(let pid, _) {
                outcome = "error lockHeld pid=\(pid.map(String.init) ?? "unknown")"
            } catch {
                outcome = "error \(error is Rejected ? "rejected" : caseName(error))"
            }
            print("call \(call) \(outcome) \(milliseconds(since: start))")
            fflush(nil)
        }
        print("done refreshes=\(refreshes.value.load(ordering: .relaxed))")
    }

    /// Runs `operation` in a task and waits for it on this thread (the process's main thread).
    static func blocking<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await operation()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }
}
