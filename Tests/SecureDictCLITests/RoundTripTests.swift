import Foundation
import SecureDictionaryTestSupport
import Testing

extension SecureDictCLI {
    /// A dictionary with every type and the values that are easy to get wrong.
    static let richDictionary = Data(
        #"""
        {
          "string": {"type": "string", "value": "héllo \"wörld\"\n\t🔑 / \\"},
          "empty": {"type": "string", "value": ""},
          "max": {"type": "integer", "value": 9223372036854775807},
          "min": {"type": "integer", "value": -9223372036854775808},
          "zero": {"type": "integer", "value": 0},
          "tenth": {"type": "real", "value": 0.1},
          "wholeReal": {"type": "real", "value": 3},
          "negativeZero": {"type": "real", "value": -0.0},
          "tiny": {"type": "real", "value": 5e-324},
          "minusInfinity": {"type": "real", "value": "-inf"},
          "notANumber": {"type": "real", "value": "nan"},
          "yes": {"type": "bool", "value": true},
          "no": {"type": "bool", "value": false},
          "nanoseconds": {"type": "date", "value": "2026-11-22T03:57:00.123456789Z"},
          "moonLanding": {"type": "date", "value": "1969-07-20T22:17:40.5+02:00"},
          "nearReferenceDate": {"type": "date", "value": 1e-300},
          "bytes": {"type": "data", "value": "AAECAwQF/w=="},
          "noBytes": {"type": "data", "value": ""},
          "list": {"type": "array", "value": [
            {"type": "integer", "value": 1}, {"type": "string", "value": "two"}, {"type": "array", "value": []}
          ]},
          "nested": {"type": "dictionary", "value": {
            "inner": {"type": "bool", "value": true},
            "deeper": {"type": "dictionary", "value": {"date": {"type": "date", "value": "2001-01-01T00:00:00Z"}}}
          }}
        }
        """#.utf8)

    static func temporaryFile(_ name: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("sd-cli-\(UUID().uuidString)-\(name)").path
    }

    @Test func exportDeleteImportIsByteForByte() throws {
        let app = TestApp()
        let source = Self.temporaryFile("rich.json")
        try Self.richDictionary.write(to: URL(fileURLWithPath: source))
        defer { try? FileManager.default.removeItem(atPath: source) }
        let load = try app.cli("import", "--name", "rich", source)
        #expect(load.status == 0 && load.stdout.isEmpty && load.stderr.isEmpty, "\(load)")

        // The binary export is exactly the stored secret.
        let binary = try app.cli("export", "--name", "rich", "--format", "binary-plist")
        #expect(binary.status == 0, "\(binary)")
        #expect(binary.stdout.starts(with: Data("bplist00".utf8)))
        #expect(try app.storedBytes(name: "rich") == binary.stdout)
        let json = try app.cli("export", "--name", "rich")
        #expect(json.status == 0, "\(json)")

        for (format, exported) in [("binary-plist", binary.stdout), ("json", json.stdout)] {
            let file = Self.temporaryFile("export")
            defer { try? FileManager.default.removeItem(atPath: file) }
            let export = try app.cli("export", "--name", "rich", "--format", format, "-o", file)
            #expect(export.status == 0 && export.stdout.isEmpty, "\(export)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == exported)
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "an export holds secrets: mode \(String(mode ?? 0, radix: 8))")

            #expect(try app.cli("delete", "--name", "rich", "--force").status == 0)
            #expect(try app.cli("read", "--name", "rich").status == 1)
            let back = try app.cli("import", "--name", "rich", file)
            #expect(back.status == 0, "\(format): \(back)")
            #expect(try app.cli("export", "--name", "rich", "--format", "binary-plist").stdout == binary.stdout, "\(format)")
            #expect(try app.cli("export", "--name", "rich").stdout == json.stdout, "\(format)")
            #expect(try app.storedBytes(name: "rich") == binary.stdout, "\(format)")
        }

        // Through standard input too, into another dictionary.
        let piped = try app.cli("import", "--name", "copy", "-", input: json.stdout)
        #expect(piped.status == 0, "\(piped)")
        #expect(try app.storedBytes(name: "copy") == binary.stdout)
    }

    @Test func typedJSONKeepsEveryTypeApart() throws {
        let app = TestApp()
        #expect(try app.cli("import", "-", input: Self.richDictionary).status == 0)
        let json = try app.cli("read", "--json")
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: [String: Any]])
        let types = object.mapValues { $0["type"] as? String ?? "?" }
        #expect(types["max"] == "integer" && types["wholeReal"] == "real" && types["yes"] == "bool")
        #expect(object["nanoseconds"]?["value"] as? String == "2026-11-22T03:57:00.1234568Z")  // Double precision
        #expect(object["moonLanding"]?["value"] as? String == "1969-07-20T20:17:40.500Z")
        #expect(object["nearReferenceDate"]?["value"] as? Double == 1e-300)
        #expect(object["minusInfinity"]?["value"] as? String == "-inf")
        #expect(object["notANumber"]?["value"] as? String == "nan")
        #expect(try app.cli("read", "max").text == "9223372036854775807\n")
        #expect(try app.cli("read", "negativeZero").text == "-0.0\n")
        #expect(try app.cli("read", "string").text == "héllo \"wörld\"\n\t🔑 / \\\n")
        let nested = try app.cli("read", "nested")
        #expect(
            nested.text == """
                deeper (dictionary, 1 entry):
                  date (date): 2001-01-01T00:00:00.000Z
                inner (bool): true

                """, "\(nested)")
    }

    @Test func importMergesOrReplacesInOneWrite() throws {
        let app = TestApp()
        #expect(try app.cli("write", "old", "1").status == 0)
        #expect(try app.cli("write", "shared", "old").status == 0)
        let file = Data(#"{"shared": {"type": "string", "value": "new"}, "added": {"type": "integer", "value": 2}}"#.utf8)

        // The dictionary has entries: --merge or --replace is required, and nothing changes without.
        let before = try app.storedBytes(name: nil)
        let ambiguous = try app.cli("import", "-", input: file)
        #expect(ambiguous.status == 64, "\(ambiguous)")
        #expect(ambiguous.stderr.contains("--merge") && ambiguous.stderr.contains("--replace"))
        #expect(try app.storedBytes(name: nil) == before)

        #expect(try app.cli("import", "-", "--merge", input: file).status == 0)
        #expect(try app.cli("read").text == "added (integer): 2\nold (string): \"1\"\nshared (string): \"new\"\n")
        #expect(try app.cli("import", "-", "--replace", input: file).status == 0)
        #expect(try app.cli("read").text == "added (integer): 2\nshared (string): \"new\"\n")
    }

    @Test func importRejectsFilesItCannotReadAndWritesNothing() throws {
        let app = TestApp()
        let xml = try app.cli("export", "--format", "xml-plist")  // no such dictionary yet
        #expect(xml.status == 1)
        let bad: [(String, Data, String)] = [
            ("not JSON", Data("this is not json".utf8), "is not valid JSON"),
            ("untyped", Data(#"{"k": "v"}"#.utf8), "is not a secure-dict JSON dictionary"),
            ("unknown type", Data(#"{"k": {"type": "uuid", "value": "x"}}"#.utf8), "unknown type"),
            ("bad date", Data(#"{"k": {"type": "date", "value": "yesterday"}}"#.utf8), "a value of type date must be"),
            ("real as integer", Data(#"{"k": {"type": "integer", "value": 1.5}}"#.utf8), "a value of type integer must be"),
            ("XML", Data("<?xml version=\"1.0\"?><plist><dict/></plist>".utf8), "XML property list"),
            (
                "corrupt binary", Data("bplist00".utf8) + Data(repeating: 0xFF, count: 40),
                "is not a property list SecureDictionary can read"
            ),
            ("array root", Data("[]".utf8), "is not a secure-dict JSON dictionary"),
        ]
        for (what, bytes, message) in bad {
            let output = try app.cli("import", "-", input: bytes)
            #expect(output.status == 4, "\(what): \(output)")
            #expect(output.stderr.hasPrefix("Error: standard input ") && output.stderr.contains(message), "\(what): \(output)")
            #expect(output.stderr.split(separator: "\n").count == 1, "\(what): \(output)")
            #expect(!output.stderr.contains("yesterday") && !output.stderr.contains("\"v\""))
        }
        let missing = try app.cli("import", "/nonexistent/secure-dict-import.json")
        #expect(missing.status == 4 && missing.stderr.contains("cannot read /nonexistent/"), "\(missing)")
        #expect(try app.cli("read").status == 1)  // nothing was created
    }

    @Test func xmlExportIsForOtherTools() throws {
        let app = TestApp()
        #expect(try app.cli("import", "-", input: Self.richDictionary).status == 0)
        let xml = try app.cli("export", "--format", "xml-plist")
        #expect(xml.status == 0, "\(xml)")
        #expect(xml.text.hasPrefix("<?xml"))
        #expect(
            xml.text.contains("<key>yes</key>\n\t<true/>")
                && xml.text.contains("<key>max</key>\n\t<integer>9223372036854775807</integer>"))
        #expect(xml.text.contains("<key>wholeReal</key>\n\t<real>3</real>"))
        // What XML cannot hold is said once, on stderr, without any value.
        #expect(xml.stderr.hasPrefix("Note: the XML property list rounds dates down to the whole second"), "\(xml)")
        #expect(xml.stderr.split(separator: "\n").count == 1)
        // Binary output never goes to a terminal; a pipe is fine (tested above).
    }
}

extension SecureDictCLI {
    @Test func importIsOneKeyringWrite() throws {
        let app = TestApp()
        let monitor = try BusMonitor()
        let item = "\(app.id).__SecureDictionary__.target"
        #expect(try app.cli("write", "--name", "target", "old", "1").status == 0)
        let three = Data(
            #"""
            {"a": {"type": "integer", "value": 1}, "b": {"type": "real", "value": 2.5},
             "c": {"type": "array", "value": [{"type": "bool", "value": true}]}}
            """#.utf8)
        #expect(try app.cli("import", "--name", "target", "-", "--merge", input: three).status == 0)
        #expect(try app.cli("import", "--name", "target", "-", "--replace", input: three).status == 0)
        #expect(try app.cli("import", "--name", "target", "-", input: Data("nonsense".utf8)).status == 4)
        #expect(try app.cli("import", "--name", "target", "-", input: three).status == 64)  // needs a mode
        // A last write to another item: once the monitor shows it, it has shown everything before.
        #expect(try app.cli("write", "--name", "sentinel", "k", "v").status == 0)
        try monitor.wait(for: "\"\(app.id).__SecureDictionary__.sentinel\"")
        // KeePassXC: CreateItem once, then Item.SetSecret (the sentinel is a new item).
        #expect(monitor.writes(ofItem: item) + monitor.secretReplacements == 3, "one write, then one per successful import")
        #expect(try app.cli("read", "--name", "target").text.split(separator: "\n").count == 4)
    }
}

extension SecureDictCLI {
    /// `write` reads the item when it opens the dictionary and again in the check before the
    /// write. A read that decrypts to a property list proves the session's key, so the write
    /// is not read back: two `GetSecrets`, where an unproven session needs four (the content
    /// to put back, the read-back). A new item has nothing to read: its write is read back.
    @Test func aWriteAfterAReadThatProvesTheSessionIsNotReadBack() throws {
        let app = TestApp()
        #expect(try app.cli("write", "--name", "proven", "k", "1").status == 0)
        let monitor = try BusMonitor(members: ["CreateItem", "SetSecret", "GetSecrets"])
        #expect(try app.cli("write", "--name", "proven", "k", "2").status == 0)
        #expect(try app.cli("write", "--name", "new", "k", "1").status == 0)
        // A last new item: once the monitor shows its CreateItem, it has shown everything
        // before (dbus-monitor's output may lag behind the bus), and a new item's write reads
        // no secret before its CreateItem.
        #expect(try app.cli("write", "--name", "sentinel", "k", "1").status == 0)
        try monitor.wait(for: "\"\(app.id).__SecureDictionary__.sentinel\"")
        let all = monitor.calls(namingItemsOf: app.id)
        let sentinel = all.firstIndex(of: "CreateItem \(app.id).__SecureDictionary__.sentinel") ?? all.endIndex
        let calls = Array(all[..<sentinel])
        guard let newItem = calls.firstIndex(of: "CreateItem \(app.id).__SecureDictionary__.new") else {
            Issue.record("no CreateItem of the new item in \(calls)")
            return
        }
        // The existing item's load, check and write (CreateItem, or SetSecret on KeePassXC);
        // nothing of the new item's write reads a secret before its CreateItem.
        let beforeNewItem = calls[..<newItem]
        #expect(beforeNewItem.filter { $0 == "GetSecrets" }.count == 2, "\(calls)")
        #expect(beforeNewItem.filter { $0.hasPrefix("CreateItem") || $0 == "SetSecret" }.count == 1, "\(calls)")
        // The new item's session read nothing first: its write is read back.
        #expect(calls[(newItem + 1)...].filter { $0 == "GetSecrets" }.count == 1, "\(calls)")
        #expect(try app.cli("read", "--name", "proven", "k").text == "2\n")
    }
}
