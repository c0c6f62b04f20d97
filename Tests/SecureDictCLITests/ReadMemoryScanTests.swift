import Foundation
import SecureDictionaryTestSupport
import Testing

/// `secure-dict read KEY` copies the one value asked for, and no other key or value, into
/// ordinary memory: in a core taken as the tool exits (gdb stops it at `exit_group`, after the
/// dictionary is released), no key or value it did not print is found. Small dictionaries (one
/// filler entry beside the secret) and large ones (a hundred), written with the tool itself,
/// five of each, one process each. Runs once, with gnome-keyring.
@Suite(
    .serialized,
    .enabled(if: CLIHarness.enabled && PrivateKeyring.provider == "gnome-keyring", "runs once, with gnome-keyring"))
struct ReadMemoryScan {
    @Test func readingOneKeyLeavesNoOtherKeyOrValueInTheToolsMemory() throws {
        let app = TestApp()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sd-read-scan-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
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

            let core = "\(folder)/core-\(index)"
            let gdb = try CoreScan.tool("gdb")
            let run = try CLIHarness.run(
                gdb,
                [
                    "--readnever", "-batch", "-ex", "set startup-with-shell off", "-ex", "catch syscall exit_group", "-ex", "run",
                    "-ex", "gcore \(core)", "-ex", "kill", "--args", CLIHarness.binary, "read", "--app", app.id, "--name", name,
                    "filler-000",
                ])
            try #require(FileManager.default.fileExists(atPath: core), "gdb took no core: \(run.stderr.suffix(500))")
            #expect(run.text.contains("filler 0"), "the tool printed no value: \(run.text.suffix(300))")
            let scan = try CoreScan.search(core: core, secrets: ["key": Array(key.utf8), "value": Array(value.utf8)])
            try? FileManager.default.removeItem(atPath: core)
            if !scan.foundAnywhereButRegisters.isEmpty {
                leaking.append("\(name) (\(fillers) fillers): \(scan.foundAnywhereButRegisters.sorted()) at \(scan.places)")
            }
        }
        #expect(leaking.isEmpty, "a key or value that read did not ask for, in the tool's memory at its exit: \(leaking)")
        print("read memory scan: a key or value not asked for in \(leaking.count) of 10 processes")
    }
}
