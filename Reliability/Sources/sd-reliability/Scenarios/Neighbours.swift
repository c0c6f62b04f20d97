import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// Scenario 7: in a password-less collection (gnome-keyring keeps those in a plain "textual"
/// file), our writes never damage the other items, before and after a daemon restart.
///
/// How it is made headless: gnome-keyring's private
/// `InternalUnsupportedGuiltRiddenInterface.CreateWithMasterPassword` with an empty password
/// creates the collection. gnome-keyring's `SetAlias` supports only the `default` alias
/// ("Only the 'default' alias is supported") and `ReadAlias` resolves no other name, so the
/// dictionary reaches the collection through `default`, pointed at it for the scenario and
/// back at "login" afterwards (also around each restart: scripts/keyring-daemon waits for
/// `default` to be unlocked, and a textual collection comes back locked after a restart).
enum Neighbours {
    static let collectionLabel = "sdreliability"

    static func run(_ harness: Harness, _ report: Report) {
        guard harness.hasKeyring(report, check: "neighbours in a password-less collection", target: "read back") else { return }
        let fixture: FixtureServer
        let login: String
        let path: String
        do {
            fixture = try harness.fixture()
            login = try fixture.request(["op": "alias", "alias": "default"]) as? String ?? ""
            path = try fixture.request(["op": "create_collection", "label": collectionLabel, "password": ""]) as? String ?? ""
            _ = try fixture.request(["op": "set_alias", "alias": "default", "collection": path])
        } catch {
            report.cannotRun(
                "neighbours in a password-less collection", target: "read back",
                reason: "cannot make a password-less collection: \(error)")
            return
        }
        defer { _ = try? fixture.request(["op": "set_alias", "alias": "default", "collection": login]) }
        let textual =
            harness.control.map { control in
                (try? String(contentsOfFile: "\(control)/env", encoding: .utf8))?
                    .split(separator: "\n").first { $0.hasPrefix("export XDG_DATA_HOME=") }
                    .map { String($0.dropFirst("export XDG_DATA_HOME=".count)) } ?? ""
            } ?? ""
        let keyringFile = "\(textual)/keyrings/\(path.split(separator: "/").last ?? "")\(".keyring")"
        exercise(harness, report, fixture: fixture, collection: path, login: login, keyringFile: keyringFile)
    }

    static func exercise(
        _ harness: Harness, _ report: Report, fixture: FixtureServer, collection: String,
        login: String, keyringFile: String
    ) {
        let app = harness.appID("neighbours")
        let textNeighbour = ["application": "some-other-app", "user": "neighbour"]
        let binaryNeighbour = ["application": "some-other-app", "kind": "binary"]
        let textSecret = Array("hunter2-correct-horse".utf8)
        let binarySecret: [UInt8] = [0x00, 0x01, 0x0A, 0x5B, 0x31, 0x5D, 0x0A, 0xFF, 0x3D]
        var problems: [String] = []
        var steps = 0
        do {
            try fixture.plant(textSecret, attributes: textNeighbour, label: "neighbour (text)", collection: collection)
            try fixture.plant(binarySecret, attributes: binaryNeighbour, label: "neighbour (binary)", collection: collection)
        } catch {
            report.cannotRun("neighbours", target: "read back", reason: "cannot plant the neighbours: \(error)")
            return
        }
        let textDigest = sha256Hex(textSecret)
        let binaryDigest = sha256Hex(binarySecret)
        // Values meant to break a line-based file: newlines, section headers, NULs, XML.
        let hostileText = "line one\n[1]\nsecret=overwritten\n\0nul\r\n<?xml version=\"1.0\"?><plist><dict/></plist>\n"
        var model: [String: PropertyListValue] = [:]

        func verify(_ step: String) {
            steps += 1
            if (try? fixture.sha256(textNeighbour)) != textDigest {
                problems.append("\(step): the text neighbour changed or vanished")
            }
            if (try? fixture.sha256(binaryNeighbour)) != binaryDigest {
                problems.append("\(step): the binary neighbour changed or vanished")
            }
            do {
                let fresh = try SecureDictionary(
                    name: "neighbours", applicationID: app, options: .init(store: SecretServiceStore()))
                if fresh.snapshot != model { problems.append("\(step): the dictionary reads back different entries") }
            } catch {
                problems.append("\(step): the dictionary does not open: \(caseName(error))")
            }
        }

        let dictionary: SecureDictionary
        do {
            dictionary = try SecureDictionary(name: "neighbours", applicationID: app, options: .init(store: SecretServiceStore()))
            verify("open")
            let operations: [(String, () throws -> Void)] = [
                ("setValue text", { try dictionary.setValue(.string(hostileText), forKey: "text\nkey=[x]") }),
                ("setValue data", { try dictionary.setValue(.data(Data(hostileText.utf8)), forKey: "data") }),
                ("subscript set", { dictionary["n"] = 42 }),
                (
                    "update",
                    {
                        try dictionary.update {
                            $0["nested"] = ["a\nb": [.string(hostileText), 1.5, true]]
                            $0["n"] = nil
                        }
                    }
                ),
                ("removeValue", { try dictionary.removeValue(forKey: "data") }),
                ("removeAll", { try dictionary.removeAll() }),
                ("setValue after removeAll", { try dictionary.setValue("again\n", forKey: "k") }),
            ]
            for (step, operation) in operations {
                try operation()
                model = dictionary.snapshot
                verify(step)
            }
            try SecureDictionary.delete(name: "neighbours", applicationID: app, options: .init(store: SecretServiceStore()))
            model = [:]
            verify("delete")
            try dictionary.update { $0 = ["final": .string(hostileText), "bytes": .data(Data([0, 10, 13, 0]))] }
            model = dictionary.snapshot
            verify("write after delete")
        } catch {
            problems.append("operation failed: \(caseName(error))")
        }
        let fileText = (try? String(contentsOfFile: keyringFile, encoding: .utf8)) ?? ""
        report.add(
            "every operation in a password-less (textual) collection", target: "neighbours and dictionary read back",
            measured: "\(steps) steps, \(problems.count) problems"
                + (fileText.isEmpty ? "" : "; the file is textual: \(fileText.contains("binary-secret=") ? "yes" : "NO")"),
            pass: problems.isEmpty && steps >= 10, note: problems.first)

        // A daemon restart: default back on "login" (keyring-daemon waits for it to be unlocked).
        var restartProblems: [String] = []
        _ = try? fixture.request(["op": "set_alias", "alias": "default", "collection": login])
        guard harness.daemon("restart").succeeded else {
            report.add(
                "after a daemon restart", target: "neighbours and dictionary read back", measured: "the restart failed",
                pass: false)
            return
        }
        fixture.reset()
        _ = try? fixture.request(["op": "set_alias", "alias": "default", "collection": collection])
        let lockedAfterRestart = (try? fixture.request(["op": "locked", "collection": collection]) as? Bool) ?? nil
        // Right after the restart, before anyone unlocks: the collection needs no password, so
        // Service.Unlock would open it without a prompt; SecureDictionary never calls Unlock.
        var firstOpen = "opened"
        do {
            let fresh = try SecureDictionary(name: "neighbours", applicationID: app, options: .init(store: SecretServiceStore()))
            if fresh.snapshot != model { firstOpen = "opened with different entries" }
        } catch { firstOpen = caseName(error) }
        report.add(
            "open right after a restart, before anyone unlocks the collection",
            target: "opens (a password-less collection needs no prompt)",
            measured: "\(firstOpen) (the collection is \(lockedAfterRestart == true ? "locked" : "unlocked") after the restart)",
            pass: firstOpen == "opened",
            note: firstOpen == "locked"
                ? "gnome-keyring reloads a textual collection locked; Service.Unlock opens it with no prompt (prompt \"/\")"
                : nil)
        // What an ordinary libsecret client sees at that moment (it may unlock, with no prompt).
        let lookup = Subprocess.run("/usr/bin/env", ["secret-tool", "lookup", "user", "neighbour"], timeout: .seconds(10))
        let ordinary = lookup.succeeded && lookup.stdout == Data(textSecret)
        report.tracked(
            "secret-tool lookup of the neighbour at that moment",
            measured: ordinary ? "found (libsecret unlocked the collection without a prompt)" : "not found (\(lookup.how))")
        let unlock = Subprocess.run(
            "/usr/bin/env",
            [
                "gdbus", "call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets",
                "--method", "org.freedesktop.Secret.Service.Unlock", "['\(collection)']",
            ], timeout: .seconds(10))
        if !unlock.text.contains("objectpath '/')") { restartProblems.append("Service.Unlock wanted a prompt: \(unlock.text)") }
        let before = problems.count
        verify("after the restart and Service.Unlock")
        restartProblems += problems.dropFirst(before)
        report.add(
            "after a daemon restart (and Service.Unlock, no prompt)", target: "neighbours and dictionary read back",
            measured: restartProblems.isEmpty
                ? "both neighbours and the dictionary read back" : "\(restartProblems.count) problems",
            pass: restartProblems.isEmpty, note: restartProblems.first)
        _ = try? fixture.delete(textNeighbour)
        _ = try? fixture.delete(binaryNeighbour)
    }
}
