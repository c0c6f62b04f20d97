import Foundation
import SecureDictionaryTestSupport

/// The sandboxed app of the store contract's portal files (`ContractStore.Kind.portalFiles`).
enum PortalApp {
    static let id = "io.github.securedictionary.PortalContract"

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The master secret the Secret portal gives the app, fetched once, inside its sandbox
    /// (`keyring-fixture.py portal-secret`): this process is no sandboxed app, and the portal
    /// gives it nothing.
    static let secret: Result<[UInt8], any Error> = Result {
        let output = try PrivateKeyring.sandboxed(
            appID: id, data: try TemporaryFolder.create("sd-contract-portal-key"), "/usr/bin/python3",
            [PrivateKeyring.packageRoot.appendingPathComponent("scripts/keyring-fixture.py").path, "portal-secret"],
            timeout: .seconds(60))
        let hex = Array(output.trimmedText.utf8)
        let bytes = stride(from: 0, to: hex.count - 1, by: 2).compactMap {
            UInt8(String(decoding: hex[$0...$0 + 1], as: UTF8.self), radix: 16)
        }
        guard output.succeeded, hex.count >= 64, bytes.count * 2 == hex.count else {
            throw Failure(description: "the Secret portal gave the sandboxed app no secret: \(output)")
        }
        return bytes
    }

    /// The process called `command` among `root` and its descendants (a sandboxed program,
    /// by its pid outside the sandbox's pid namespace, as `/proc/locks` names it), else `root`.
    static func process(named command: String, from root: Int32) -> Int {
        var children: [Int32: [Int32]] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let end = stat.lastIndex(of: ")")
            else { continue }
            // "PID (COMMAND) STATE PPID …": the command may hold spaces and parentheses.
            let fields = stat[stat.index(after: end)...].split(separator: " ")
            if fields.count > 1, let parent = Int32(fields[1]) { children[parent, default: []].append(pid) }
        }
        var queue = [root]
        while !queue.isEmpty {
            let pid = queue.removeFirst()
            let name = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)
            if name?.trimmingCharacters(in: .newlines) == command { return Int(pid) }
            queue += children[pid] ?? []
        }
        return Int(root)
    }
}
