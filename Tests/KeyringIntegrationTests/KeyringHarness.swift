import Foundation
import Testing

/// Access to the private gnome-keyring that `scripts/with-private-keyring` starts for the tests.
enum KeyringHarness {
    static let environment = ProcessInfo.processInfo.environment
    /// A private keyring is running (never the user's own: these tests lock and kill it).
    static let available = environment["SD_PRIVATE_KEYRING"] == "1"
    /// Set by scripts/test in CI: a missing keyring fails the tests instead of skipping them.
    static let required = environment["SD_REQUIRE_KEYRING"] == "1"
    static let enabled = available || required

    static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" && !FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
            url.deleteLastPathComponent()
        }
        return url
    }()

    /// The built `sd-test-writer`, next to the test bundle.
    static var writer: String {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for folder in [here, here.deletingLastPathComponent(), packageRoot.appendingPathComponent(".build/debug")] {
            let candidate = folder.appendingPathComponent("sd-test-writer").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return "sd-test-writer"
    }

    struct Output {
        var status: Int32
        var stdout: Data
        var stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// Runs a program to completion.
    @discardableResult
    static func run(_ program: String, _ arguments: [String], environment extra: [String: String] = [:]) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program.hasPrefix("/") ? program : "/usr/bin/env")
        process.arguments = program.hasPrefix("/") ? arguments : [program] + arguments
        process.environment = environment.merging(extra) { _, new in new }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: stdout, stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// `scripts/keyring-daemon COMMAND` (lock, unlock, restart, freeze, thaw…); records a failure.
    static func daemon(_ command: String) throws {
        let output = try run(packageRoot.appendingPathComponent("scripts/keyring-daemon").path, [command])
        #expect(output.status == 0, "keyring-daemon \(command): \(output.stderr)")
    }

    /// `scripts/keyring-fixture.py …`: raw access to items, bypassing SecureDictionary.
    static func fixture(_ arguments: [String], input: Data? = nil) throws -> Output {
        var arguments = arguments
        var file: URL?
        if let input {
            file = FileManager.default.temporaryDirectory.appendingPathComponent("sd-fixture-\(UUID().uuidString)")
            try input.write(to: file!)
            arguments += ["--file", file!.path]
        }
        defer { if let file { try? FileManager.default.removeItem(at: file) } }
        return try run("/usr/bin/python3", [packageRoot.appendingPathComponent("scripts/keyring-fixture.py").path] + arguments)
    }

    static func attributeArguments(_ attributes: [String: String]) -> [String] {
        attributes.sorted { $0.key < $1.key }.flatMap { ["--attr", "\($0.key)=\($0.value)"] }
    }
}
