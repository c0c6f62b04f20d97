import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// design.md section 1: what other tools see.
    @Suite struct StoredItemContract {
        @Test func itemHasTheDocumentedLabelAttributesAndBinaryPlist() throws {
            let test = TestItem("contract")
            let dictionary = try test.open()
            let date = Date(timeIntervalSinceReferenceDate: 700_000_000.25)
            try dictionary.update { entries in
                entries = [
                    "token": "s3cr3t\nline2", "count": 3, "ratio": 0.5, "on": true, "when": .date(date),
                    "blob": .data(Data([0, 1, 2, 255])), "list": [1, "two"], "nested": ["a": ["b": 1]],
                ]
            }

            let listed = try KeyringHarness.fixture(["list"] + test.fixtureAttributes)
            let fields = listed.trimmedText.split(separator: "\t").map(String.init)
            #expect(fields.count == 4)
            #expect(try fields[safe: 1] == test.item.name)
            #expect(fields[safe: 2] == "unlocked")
            var attributes = try JSONDecoder().decode([String: String].self, from: Data((fields[safe: 3] ?? "{}").utf8))
            if PrivateKeyring.provider == "keepassxc" {
                // KeePassXC adds attributes of its own to every item: ours must be there, exactly.
                let own: Set = ["Title", "URL", "UserName", "Notes", "Path", "Uuid", "FDO_SECRETS_CONTENT_TYPE"]
                attributes = attributes.filter { !own.contains($0.key) }
            }
            #expect(
                attributes == [
                    "service": try test.item.name, "application": test.appID, "dictionary": "contract",
                    "xdg:schema": "io.github.securedictionary.Dictionary",
                ])

            let raw = try KeyringHarness.fixture(["read"] + test.fixtureAttributes)
            #expect(raw.stdout.starts(with: Data("bplist00".utf8)))
            // Python's plistlib reads the same dictionary.
            let script = """
                import plistlib, sys, json, datetime, base64
                d = plistlib.loads(sys.stdin.buffer.read())
                def conv(v):
                    if isinstance(v, bool): return ["bool", v]
                    if isinstance(v, int): return ["int", v]
                    if isinstance(v, float): return ["real", v]
                    if isinstance(v, bytes): return ["data", base64.b64encode(v).decode()]
                    if isinstance(v, datetime.datetime): return ["date", v.isoformat()]
                    if isinstance(v, list): return ["array", [conv(x) for x in v]]
                    if isinstance(v, dict): return ["dict", {k: conv(x) for k, x in v.items()}]
                    return ["string", v]
                print(json.dumps({k: conv(v) for k, v in d.items()}, sort_keys=True))
                """
            let decoded = try pythonPlist(script, input: raw.stdout)
            #expect(decoded.contains(#""token": ["string", "s3cr3t\nline2"]"#))
            #expect(decoded.contains(#""count": ["int", 3]"#))
            #expect(decoded.contains(#""ratio": ["real", 0.5]"#))
            #expect(decoded.contains(#""on": ["bool", true]"#))
            #expect(decoded.contains(#""blob": ["data", "AAEC/w=="]"#))
            #expect(decoded.contains(#""when": ["date", "2023-03-08T20:26:40.250000"]"#))
            #expect(decoded.contains(#""nested": ["dict", {"a": ["dict", {"b": ["int", 1]}]}]"#))

            // A fresh load through a new connection returns exactly what was written.
            #expect(try test.openFresh().snapshot == dictionary.snapshot)
            #expect(try test.openFresh()["when"]?.dateValue == date)
        }

        @Test func defaultDictionaryHasNoNameSuffix() throws {
            let test = TestItem()
            let dictionary = try SecureDictionary(applicationID: test.appID)
            try dictionary.setValue(1, forKey: "k")
            #expect(dictionary.item.name == "\(test.appID).__SecureDictionary__")
            #expect(try SecureDictionary.names(applicationID: test.appID) == [""])
            try SecureDictionary(name: "other", applicationID: test.appID).setValue(1, forKey: "k")
            #expect(try SecureDictionary.names(applicationID: test.appID) == ["", "other"])
            #expect(try SecureDictionary.items().contains { $0.item.applicationID == test.appID && !$0.isLocked })
            #expect(try SecureDictionary.delete(name: nil, applicationID: test.appID))
            #expect(try SecureDictionary.names(applicationID: test.appID) == ["other"])
        }

        @Test(.enabled(if: PrivateKeyring.hasSessionCollection, Comment(rawValue: PrivateKeyring.noSessionCollection)))
        func sessionCollectionIsSeparate() throws {
            let test = TestItem("session")
            let inSession = try test.open(.init(collection: .session, store: SecretServiceStore()))
            try inSession.setValue("only in session", forKey: "k")
            #expect(try test.openFresh().isEmpty)
            #expect(try test.open(.init(collection: .session, store: SecretServiceStore()))["k"] == "only in session")
        }

        @Test func sizesRoundTripByteExact() throws {
            let test = TestItem("sizes")
            let dictionary = try test.open()
            for size in [0, 1, 4_096, 65_536] {
                let bytes = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
                try dictionary.setValue(.data(bytes), forKey: "v\(size)")
            }
            let fresh = try test.openFresh()
            for size in [0, 1, 4_096, 65_536] {
                #expect(fresh["v\(size)"]?.dataValue?.count == size)
                #expect(fresh["v\(size)"] == dictionary["v\(size)"])
            }
        }

        func pythonPlist(_ script: String, input: Data) throws -> String {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("sd-\(UUID().uuidString).py")
            try script.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let output = try ChildProcess.run("/usr/bin/python3", [file.path], input: input, timeout: .seconds(60))
            #expect(output.succeeded, "\(output)")
            return output.text
        }
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
