import Foundation
import SecureDictionaryTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The details a newcomer tripped over: stored types kept, one bad item
/// not hiding the others, the right exit code for bad input, and sizes checked first.
extension SecureDictCLI {
    @Test func writeWithoutTypeKeepsTheStoredType() throws {
        let app = TestApp()
        #expect(try app.cli("write", "logins", "42", "--type", "int").status == 0)
        // Without --type, an integer stays an integer (it used to become the string "43").
        let kept = try app.cli("write", "logins", "43")
        #expect(kept.status == 0, "\(kept)")
        #expect(try app.cli("read", "logins", "--json").text.contains("\"integer\""))
        #expect(try app.cli("read", "logins").text == "43\n")

        // A VALUE that is not of the stored type is refused, and the value is untouched.
        let refused = try app.cli("write", "logins", "many")
        #expect(refused.status == 64, "\(refused)")
        #expect(refused.stderr.contains("the key holds an integer") && refused.stderr.contains("--type"), "\(refused)")
        #expect(!refused.stderr.contains("many"))
        #expect(try app.cli("read", "logins").text == "43\n")

        // --type replaces whatever the key held; a new key without --type is a string.
        #expect(try app.cli("write", "logins", "many", "--type", "string").status == 0)
        #expect(try app.cli("read", "logins", "--json").text.contains("\"string\""))
        #expect(try app.cli("write", "fresh", "7").status == 0)
        #expect(try app.cli("read", "fresh", "--json").text.contains("\"string\""))

        // The same from standard input, and for the other scalar types.
        #expect(try app.cli("write", "ratio", "0.5", "--type", "real").status == 0)
        #expect(try app.cli("write", "ratio", "-", input: Data("0.75\n".utf8)).status == 0)
        #expect(try app.cli("read", "ratio", "--json").text.contains("\"real\""))
        #expect(try app.cli("write", "on", "true", "--type", "bool").status == 0)
        #expect(try app.cli("write", "on", "no").status == 0)
        #expect(try app.cli("read", "on").text == "false\n")

        // A key holding an array needs --type to be replaced by one value.
        let array = #"{"list": {"type": "array", "value": [{"type": "integer", "value": 1}]}}"#
        #expect(try app.cli("import", "-", "--merge", input: Data(array.utf8)).status == 0)
        let container = try app.cli("write", "list", "2")
        #expect(container.status == 64 && container.stderr.contains("holds an array"), "\(container)")
        #expect(try app.cli("write", "list", "2", "--type", "int").status == 0)
    }

    @Test func integersUpToUInt64MaxAndNoOverflowingReals() throws {
        let app = TestApp()
        #expect(try app.cli("write", "big", "18446744073709551615", "--type", "int").status == 0)
        #expect(try app.cli("read", "big").text == "18446744073709551615\n")
        // Swift reads 1e400 as infinity: refused, not stored as inf.
        for text in ["1e400", "-1e400"] {
            let overflow = try app.cli("write", "r", "--type", "real", "--", text)
            #expect(overflow.status == 64, "\(text): \(overflow)")
        }
        #expect(try app.cli("write", "r", "inf", "--type", "real").status == 0)
        #expect(try app.cli("read", "r").text == "inf\n")
        let json = #"{"r": {"type": "real", "value": 1e400}}"#
        let imported = try app.cli("import", "-", "--replace", input: Data(json.utf8))
        #expect(imported.status == 4, "\(imported)")
        #expect(try app.cli("read", "r").text == "inf\n")
    }

    @Test func listMarksAnAmbiguousItemAndListsTheRest() throws {
        let app = TestApp()
        #expect(try app.cli("write", "a", "1").status == 0)
        #expect(try app.cli("write", "--name", "twice", "a", "1").status == 0)
        // A second item whose attributes include those of "twice" matches the same search.
        let item = "\(app.id).__SecureDictionary__.twice"
        let planted = try CLIHarness.fixture(
            ["plant", "--label", item, "--attr", "extra=1"] + app.attributes(name: "twice"), input: Data("bplist00".utf8))
        #expect(planted.status == 0, "\(planted)")

        let table = try app.cli("list")
        #expect(table.status == 0, "\(table)")
        let rows = table.text.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(rows.contains([Substring(app.id), "(default)", "1", "unlocked"]), "\(table)")
        #expect(rows.filter { $0 == [Substring(app.id), "twice", "-", "ambiguous"] }.count == 2, "\(table)")
        let json = try app.cli("list", "--json")
        let items = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [[String: Any]])
        #expect(items.compactMap { $0["state"] as? String }.sorted() == ["ambiguous", "ambiguous", "unlocked"])
        // delete --force removes both.
        #expect(try app.cli("delete", "--name", "twice", "--force").status == 0)
        #expect(try app.cli("list").text.split(separator: "\n").count == 2)
    }

    @Test func badInputExitsWith4() throws {
        let app = TestApp()
        // Not UTF-8 on standard input.
        let binary = try app.cli("write", "k", "-", input: Data([0x66, 0xFF, 0xFE, 0x0A]))
        #expect(binary.status == 4, "\(binary)")
        #expect(binary.stderr.contains("not UTF-8"))

        // Typed JSON nested deeper than a dictionary may be: a problem with the file, not the keyring.
        var deep = #"{"type": "integer", "value": 1}"#
        for _ in 0..<80 { deep = #"{"type": "array", "value": [\#(deep)]}"# }
        let tooDeep = try app.cli("import", "-", input: Data(#"{"k": \#(deep)}"#.utf8))
        #expect(tooDeep.status == 4, "\(tooDeep)")
        #expect(tooDeep.stderr.contains("cannot store"), "\(tooDeep)")
        let none = try app.cli("read")
        #expect(none.status == 1, "nothing may have been written: \(none)")
    }

    @Test func importRefusesKeysThatJSONWouldMerge() throws {
        let app = TestApp()
        let value = #"{"type": "string", "value": "x"}"#
        // "é" composed (U+00E9) and decomposed (e + U+0301); and the very same key twice.
        for json in [
            #"{"a": \#(value), "\u00e9": \#(value), "e\u0301": \#(value)}"#,
            "{\"a\": \(value), \"b\": {\"type\": \"dictionary\", \"value\": {\"k\": \(value), \"k\": \(value)}}}",
        ] {
            let imported = try app.cli("import", "-", input: Data(json.utf8))
            #expect(imported.status == 4, "\(imported)")
            #expect(imported.stderr.contains("nothing was imported"), "\(imported)")
        }
        let first = try app.cli("import", "-", input: Data(#"{"a": \#(value), "\u00e9": \#(value), "e\u0301": \#(value)}"#.utf8))
        #expect(first.stderr.contains("entries 2 and 3 of the top-level object"), "\(first)")
        let nested = try app.cli(
            "import", "-",
            input: Data(
                "{\"b\": {\"type\": \"dictionary\", \"value\": {\"k\": \(value), \"k\": \(value)}}}".utf8))
        #expect(nested.stderr.contains("entries 1 and 2 of an object at nesting depth 3"), "\(nested)")
        #expect(try app.cli("read").status == 1)
    }

    @Test func importChecksTheSizeBeforeParsing() throws {
        let app = TestApp()
        // 17 MiB of zeros, more than 4 × the 4 MiB limit: refused by its size, not as bad JSON.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sd-cli-large-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(truncate(path, 17 << 20) == 0)
        let file = try app.cli("import", path)
        #expect(file.status == 4 && file.stderr.contains("larger than import reads"), "\(file)")
        let piped = try app.cli("import", "-", input: Data(count: 17 << 20))
        #expect(piped.status == 4 && piped.stderr.contains("larger than import reads"), "\(piped)")
    }

    @Test func exportWritesToAPipe() throws {
        let app = TestApp()
        #expect(try app.cli("write", "k", "v").status == 0)
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("sd-cli-pipe-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: copy) }
        // What a user types: -o >(gpg -c …), here with cat as the reader; bash waits for it.
        let script = #""$0" export --app "$1" -o >(cat > "$2"); status=$?; wait $!; exit $status"#
        let export = try CLIHarness.run("/bin/bash", ["-c", script, CLIHarness.binary, app.id, copy])
        #expect(export.status == 0, "\(export)")
        let written = FileManager.default.contents(atPath: copy) ?? Data()
        let object = try? JSONSerialization.jsonObject(with: written) as? [String: [String: String]]
        #expect(object?["k"]?["value"] == "v", "\(String(decoding: written, as: UTF8.self))")
    }

    /// Before: a dictionary stored above the reader's size limit (written with a raised
    /// `Options.maximumSize`) could not be read by `secure-dict`, and the error gave write
    /// advice ("Nothing was written: store less."). The read names the stored size, the limit
    /// and the option that raises it; `list` says why the item is unreadable. More than a
    /// dictionary can store is exit 4, as the README's table says, on a read as on a write (a
    /// read exited 3, a write 4).
    @Test func aDictionaryAboveTheReadersLimitSaysHowToReadIt() throws {
        let app = TestApp()
        #expect(try app.cli("write", "big", String(repeating: "x", count: 3000)).status == 0)
        let read = try app.cli("read", "--maximum-size", "1000")
        #expect(read.status == 4, "\(read)")
        #expect(read.stderr.contains("limit of 1000") && read.stderr.contains("--maximum-size"), "\(read)")
        #expect(!read.stderr.contains("store less") && !read.stderr.contains("Nothing was written"), "\(read)")
        let size = try #require(read.stderr.firstMatch(of: /stored as ([0-9]+) bytes/)?.1, "\(read)")
        #expect(try app.cli("read", "--maximum-size", String(size), "big").text.count == 3001)
        let listed = try app.cli("list", "--maximum-size", "1000")
        #expect(listed.status == 0 && listed.text.contains("unreadable (\(size) bytes, above --maximum-size 1000)"), "\(listed)")
        let json = try app.cli("list", "--json", "--maximum-size", "1000")
        #expect(json.text.contains("\"reason\" : \"\(size) bytes, above --maximum-size 1000\""), "\(json)")
        let written = try app.cli("write", "more", "y", "--maximum-size", "1000")
        #expect(written.status == 4 && written.stderr.contains("--maximum-size"), "\(written)")
    }
}
