import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

/// Everything about the keyring itself, against a real gnome-keyring-daemon on a private bus
/// (`scripts/test` starts it). Serialized: the tests lock, freeze and restart that daemon.
@Suite(.serialized, .enabled(if: KeyringHarness.enabled, "needs the private keyring of scripts/with-private-keyring"))
struct KeyringIntegration {
    @Test func aKeyringIsRunning() throws {
        #expect(KeyringHarness.available, "SD_REQUIRE_KEYRING is set but no private keyring runs")
        let names = try SecureDictionary.names(applicationID: "probe.\(UUID().uuidString)")
        #expect(names.isEmpty)
    }
}

/// A fresh application ID per test, so tests never see each other's items.
struct TestItem {
    let appID = "it.\(UUID().uuidString)"
    let name: String

    init(_ name: String = "settings") { self.name = name }

    var item: KeyringItem { get throws { try KeyringItem(dictionaryName: name, applicationID: appID) } }

    func open(_ options: SecureDictionary.Options = .init()) throws(SecureDictionaryError) -> SecureDictionary {
        try SecureDictionary(name: name, applicationID: appID, options: options)
    }

    /// Opens through a new store: a new connection and no shared cache, as another process would.
    func openFresh(timeout: Duration = .seconds(3)) throws(SecureDictionaryError) -> SecureDictionary {
        try open(.init(timeout: timeout, store: SecretServiceStore()))
    }

    var fixtureAttributes: [String] { get throws { KeyringHarness.attributeArguments(try item.attributes) } }

    /// The SHA-256 of the stored secret, read raw over D-Bus.
    func sha256() throws -> String {
        let output = try KeyringHarness.fixture(["sha256"] + fixtureAttributes)
        #expect(output.status == 0, "sha256: \(output.stderr)")
        return output.trimmedText
    }

    /// Plants raw bytes as the item's secret, with the exact attributes and label.
    func plant(_ bytes: Data) throws {
        let output = try KeyringHarness.fixture(["plant", "--label", try item.name] + fixtureAttributes, input: bytes)
        #expect(output.status == 0, "plant: \(output.stderr)")
    }
}
