import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Exports and inputs that do what their help says.
extension SecureDictCLI {
    /// Parses `xml` with Python's plistlib (expat): the XML must be well-formed, and other
    /// tools must read it. Prints the `repr` of the parsed root.
    private static func plistlib(_ xml: Data) throws -> CLIHarness.Output {
        try CLIHarness.run(
            "/usr/bin/python3", ["-c", "import plistlib, sys; print(repr(plistlib.loads(sys.stdin.buffer.read())))"],
            input: xml)
    }

    /// A NUL or U+0001 went into the XML as it was (no parser reads that), while the note said
    /// control characters were dropped; a carriage return came back as a line feed.
    @Test func xmlExportIsWellFormedAndSaysWhatItReplaced() throws {
        let app = TestApp()
        let json = #"""
            {"s": {"type": "string", "value": "a\u0000b\u0001c\rd\ufffee<&>\tf\n"},
             "key\u0002": {"type": "string", "value": "x"},
             "plain": {"type": "string", "value": "héllo"}}
            """#
        #expect(try app.cli("import", "-", input: Data(json.utf8)).status == 0)
        let xml = try app.cli("export", "--format", "xml-plist")
        #expect(xml.status == 0, "\(xml)")
        let parsed = try Self.plistlib(xml.stdout)
        #expect(parsed.status == 0, "not well-formed: \(parsed.stderr)\n\(xml.text)")
        // Python's repr: U+FFFD as it is, the carriage return (kept as &#13;) as \r.
        #expect(
            parsed.text == "{'key\u{FFFD}': 'x', 'plain': 'héllo', 's': 'a\u{FFFD}b\u{FFFD}c\\rd\u{FFFD}e<&>\\tf\\n'}\n",
            "\(parsed.text)")
        #expect(
            xml.stderr == "Note: the XML property list replaces the control characters XML cannot hold (all but tab, "
                + "line feed and carriage return) with U+FFFD in strings and keys; use --format json or binary-plist "
                + "for an exact copy.\n", "\(xml)")

        // Two keys that only such characters tell apart would become one: refused, not merged.
        let twins = #"{"k\u0001": {"type": "string", "value": "1"}, "k\u0002": {"type": "string", "value": "2"}}"#
        #expect(try app.cli("import", "--name", "twins", "-", input: Data(twins.utf8)).status == 0)
        let refused = try app.cli("export", "--name", "twins", "--format", "xml-plist")
        #expect(refused.status == 4 && refused.stdout.isEmpty, "\(refused)")
        #expect(refused.stderr.contains("use --format json or binary-plist"), "\(refused)")
    }

    /// A NaN date became -4712-01-01T12:00:00Z and an infinite one 506713-02-07T00:00:00Z,
    /// with no note.
    @Test func xmlExportWritesDatesItCannotHoldAsRealsWithANote() throws {
        let app = TestApp()
        let json = #"""
            {"nan": {"type": "date", "value": "nan"}, "inf": {"type": "date", "value": "inf"},
             "far": {"type": "date", "value": 1e13}, "ancient": {"type": "date", "value": -7e10},
             "normal": {"type": "date", "value": "2026-11-22T03:57:00Z"}}
            """#
        #expect(try app.cli("import", "-", input: Data(json.utf8)).status == 0)
        let xml = try app.cli("export", "--format", "xml-plist")
        #expect(xml.status == 0, "\(xml)")
        for bogus in ["-4712-", "506713-", "318857-", "-0218-"] {
            #expect(!xml.text.contains(bogus), "\(bogus) in \(xml.text)")
        }
        #expect(xml.text.contains("<key>normal</key>\n\t<date>2026-11-22T03:57:00Z</date>"), "\(xml.text)")
        #expect(xml.text.contains("<key>nan</key>\n\t<real>nan</real>"), "\(xml.text)")
        #expect(xml.text.contains("<key>inf</key>\n\t<real>+infinity</real>"), "\(xml.text)")
        #expect(xml.text.contains("<key>far</key>\n\t<real>10000000000000</real>"), "\(xml.text)")
        #expect(
            xml.stderr == "Note: the XML property list writes dates outside the years 1-9999 (or not finite) as <real> "
                + "seconds since 2001-01-01T00:00:00Z; use --format json or binary-plist for an exact copy.\n", "\(xml)")
        let parsed = try Self.plistlib(xml.stdout)
        #expect(parsed.status == 0 && parsed.text.contains("'far': 10000000000000.0"), "\(parsed)")
    }

    /// `export` then `import` of JSON gave back Swift's one NaN for every NaN: a stored
    /// payload (here in a real and in a date, sign bit set in one) was lost.
    @Test func aNaNPayloadSurvivesJSON() throws {
        let app = TestApp()
        let payload = Double(bitPattern: 0x7FF8_0000_0000_0001)
        let negativeSignaling = Double(bitPattern: 0xFFF0_0000_0000_0123)
        let entries: [String: PropertyListValue] = [
            "r": .real(payload), "plain": .real(.nan),
            "d": .date(Date(timeIntervalSinceReferenceDate: negativeSignaling)),
        ]
        let binary = try BinaryPropertyListCoding.encode(entries, maximumSize: 1 << 20)
        #expect(try app.cli("import", "-", input: binary).status == 0)
        #expect(try app.storedBytes(name: nil) == binary)
        let json = try app.cli("export")
        #expect(json.status == 0, "\(json)")
        #expect(json.text.contains(#""value" : "nan(0x7ff8000000000001)""#), "\(json.text)")
        #expect(json.text.contains(#""value" : "nan(0xfff0000000000123)""#), "\(json.text)")
        #expect(json.text.contains(#""value" : "nan""#), "\(json.text)")
        #expect(try app.cli("read", "r").text == "nan(0x7ff8000000000001)\n")

        #expect(try app.cli("delete", "--force").status == 0)
        let back = try app.cli("import", "-", input: json.stdout)
        #expect(back.status == 0, "\(back)")
        #expect(try app.storedBytes(name: nil) == binary, "every bit of each NaN, read back from JSON")
    }

    /// A value too large for a dictionary, on standard input, exited 3 ("the keyring failed")
    /// although the keyring was never asked: it is a problem with the input, exit 4.
    @Test func aValueTooLargeForTheDictionaryExits4() throws {
        let app = TestApp()
        #expect(try app.cli("write", "k", "small").status == 0)
        let large = try app.cli("write", "k", "-", input: Data(repeating: UInt8(ascii: "a"), count: 5_000_000))
        #expect(large.status == 4, "\(large)")
        #expect(
            large.stderr.hasPrefix("Error: the value on standard input is too large: with it, the default dictionary of ")
                && large.stderr.hasSuffix(
                    ", more than the limit of 4194304 (raise it with --maximum-size BYTES); nothing was written\n"),
            "\(large)")
        #expect(try app.cli("read", "k").text == "small\n")
    }

    /// `export -o FIFO` blocked in open(2) until a reader came, forever if none did.
    @Test func exportToANamedPipeWithoutAReaderGivesUpAtTheDeadline() throws {
        let app = TestApp()
        #expect(try app.cli("write", "k", "v").status == 0)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sd-cli-fifo-\(UUID().uuidString)").path
        #expect(mkdir(folder, 0o700) == 0)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fifo = folder + "/pipe"
        #expect(mkfifo(fifo, 0o600) == 0)

        let alone = try CLIHarness.cli(["export", "--app", app.id, "-o", fifo, "--timeout", "1"], timeout: .seconds(30))
        #expect(!alone.timedOut, "still blocked after 30 s")
        #expect(alone.status == 4, "\(alone)")
        #expect(alone.stderr.contains("no program opened this named pipe for reading within 1.0 seconds"), "\(alone)")
        #expect(alone.elapsed < .seconds(10), "\(alone.elapsed)")

        // A reader that comes within the deadline gets the export.
        let copy = folder + "/copy.json"
        let script = #"(sleep 0.3; cat "$2" > "$3") & "$0" export --app "$1" -o "$2"; status=$?; wait; exit $status"#
        let read = try CLIHarness.run("/bin/bash", ["-c", script, CLIHarness.binary, app.id, fifo, copy])
        #expect(read.status == 0, "\(read)")
        let object = try? JSONSerialization.jsonObject(with: FileManager.default.contents(atPath: copy) ?? Data())
        #expect((object as? [String: [String: String]])?["k"]?["value"] == "v", "\(String(describing: object))")
    }
}
