import Foundation
import SecureDictionaryTestSupport
import Testing

/// `secure-dict read KEY` copies the one value asked for, and no other key or value, into
/// ordinary memory: in what a core would hold as the tool exits (gdb stops it at `exit_group`,
/// after the dictionary is released), no key or value it did not print is found. Small dictionaries (one
/// filler entry beside the secret) and large ones (a hundred), written with the tool itself,
/// five of each, one process each. Runs once, with gnome-keyring.
@Suite(
    .serialized,
    .enabled(if: CLIHarness.enabled && PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct ReadMemoryScan {
    @Test func readingOneKeyLeavesNoOtherKeyOrValueInTheToolsMemory() throws {
        let app = TestApp()
        let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        func text(_ length: Int) -> String { String((0..<length).map { _ in letters.randomElement()! }) }

        var leaking: [String] = []
        for index in 0..<10 {
            let (name, fillers) = ("scan-\(index)", index < 5 ? 1 : 100)
            let entries = (0..<fillers).map { filler in
                "\"filler-\(String(format: "%03d", filler))\": {\"type\": \"string\", \"value\": \"filler \(filler)\"}"
            }
            let json = Data("{\(entries.joined(separator: ","))}".utf8)
            let imported = try app.cli("import", "--name", name, "-", "--replace", input: json)
            try #require(imported.status == 0, "import: \(imported.stderr)")
            let (key, value) = ("K" + text(23), "V" + text(23))
            let written = try app.cli("write", "--name", name, key, "-", input: Data(value.utf8))
            try #require(written.status == 0, "write: \(written.stderr)")

            // gdb stops the tool as it exits (after the release) and waits for a line on its
            // standard input while the scan reads the stopped process.
            let gdb = try LiveChild(
                try CoreScan.tool("gdb"),
                [
                    "--readnever", "-batch", "-ex", "set startup-with-shell off", "-ex", "catch syscall exit_group", "-ex", "run",
                    "-ex", "info inferiors", "-ex", "shell read line", "-ex", "kill", "--args", CLIHarness.binary, "read",
                    "--app",
                    app.id, "--name", name, "filler-000",
                ])
            // "* 1    process 12345     /path/to/secure-dict"
            var pid: Int32?
            _ = gdb.waitUntil(timeout: .seconds(120)) { lines in
                let words = lines.first { $0.contains(" process ") }?.split(separator: " ")
                pid = words?.drop { $0 != "process" }.dropFirst().first.flatMap { Int32($0) }
                return pid != nil
            }
            guard let pid else {
                Issue.record("gdb did not stop the tool: \(gdb.finish(timeout: .seconds(10)))")
                continue
            }
            let scan = try CoreScan.take(of: pid, secrets: ["key": Array(key.utf8), "value": Array(value.utf8)])
            try? gdb.send("go")
            let run = gdb.finish(timeout: .seconds(30))
            #expect(run.text.contains("filler 0"), "the tool printed no value: \(run.text.suffix(300))")
            if !scan.foundAnywhere.isEmpty {
                leaking.append("\(name) (\(fillers) fillers): \(scan.foundAnywhere.sorted()) at \(scan.places)")
            }
        }
        #expect(leaking.isEmpty, "a key or value that read did not ask for, in the tool's memory at its exit: \(leaking)")
        print("read memory scan: a key or value not asked for in \(leaking.count) of 10 processes")
    }
}
