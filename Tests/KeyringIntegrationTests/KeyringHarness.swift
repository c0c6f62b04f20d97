import Foundation
import SecureDictionaryTestSupport
import Testing

/// The private gnome-keyring of `scripts/with-private-keyring`, as these tests use it: a thin
/// layer over SecureDictionaryTestSupport that records failures as test issues.
enum KeyringHarness {
    typealias Output = ChildProcess.Output

    static let available = PrivateKeyring.available
    static let enabled = PrivateKeyring.enabled

    /// The built `sd-test-writer`, next to the test bundle.
    static var writer: String { PrivateKeyring.builtProduct("sd-test-writer") }

    /// Runs a program to completion, with this process's environment plus `extra`.
    @discardableResult
    static func run(_ program: String, _ arguments: [String], environment extra: [String: String] = [:]) throws -> Output {
        try ChildProcess.run(
            program, arguments, environment: ProcessInfo.processInfo.environment.merging(extra) { _, new in new })
    }

    /// `scripts/keyring-daemon COMMAND` (lock, unlock, restart, freeze, thaw…); records a failure.
    static func daemon(_ command: String) throws {
        let output = try PrivateKeyring.daemon(command)
        #expect(output.status == 0, "keyring-daemon \(command): \(output.stderr)")
    }

    /// A third-party client's `attempt` (python `keyring`, `secretstorage`, `secret-tool`,
    /// QtKeychain) until `done` holds for its output, 3 tries: KWallet before KDE Frameworks
    /// 6.25 refuses or garbles about 1 new session in 100 (PROVIDERS.md), and none of these
    /// clients tries again, as the library does. An attempt that writes must read back what it
    /// wrote in the same attempt (a garbled session stores garbage without a word), and must be
    /// safe to run twice.
    static func thirdParty(until done: (Output) -> Bool, _ attempt: () throws -> Output) throws -> Output {
        var output = try attempt()
        for _ in 1..<3 where !done(output) { output = try attempt() }
        return output
    }

    /// `scripts/keyring-fixture.py …`: raw access to items, bypassing SecureDictionary.
    static func fixture(_ arguments: [String], input: Data? = nil) throws -> Output {
        try PrivateKeyring.fixture(arguments, input: input)
    }

    static func attributeArguments(_ attributes: [String: String]) -> [String] {
        attributes.sorted { $0.key < $1.key }.flatMap { ["--attr", "\($0.key)=\($0.value)"] }
    }
}
