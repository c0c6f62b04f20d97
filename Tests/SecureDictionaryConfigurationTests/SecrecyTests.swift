import Configuration
import ConfigurationTesting
import Foundation
import InMemoryLogging
import Logging
import SecureDictionary
import SecureDictionaryConfiguration
import SecureDictionaryTestSupport
import Testing

/// Every value the provider gives is marked secret, so swift-configuration's own access
/// logging shows `<REDACTED>` for it; the provider's and its snapshots' renderings show no
/// key or value either.
@Suite struct ProviderSecrecy {
    // Built at run time so the canary is not a literal the binary happens to contain.
    let canaryKey = "key-" + String(UUID().uuidString.reversed())
    let canaryValue = "value-" + String(UUID().uuidString.reversed())

    func expectNoCanary(in text: String, _ context: String) {
        for form in [canaryKey, canaryValue, Data(canaryValue.utf8).base64EncodedString()] {
            #expect(!text.contains(form), "\(context) contains a canary form")
        }
    }

    @Test func everyValueOfEveryTypeIsMarkedSecret() async throws {
        let provider = try ProviderFixture(ProviderCompatEntries.all).provider
        let types: [String: ConfigType] = [
            "string": .string, "int": .int, "double": .double, "bool": .bool, "bytes": .bytes,
            "stringy.array": .stringArray, "inty.array": .intArray, "doubly.array": .doubleArray,
            "booly.array": .boolArray, "byteChunky.array": .byteChunkArray,
        ]
        for (name, type) in types {
            let key = AbsoluteConfigKey(ConfigKey(name))
            #expect(try provider.value(forKey: key, type: type).value?.isSecret == true, "value \(name)")
            #expect(try await provider.fetchValue(forKey: key, type: type).value?.isSecret == true, "fetch \(name)")
            #expect(try provider.snapshot().value(forKey: key, type: type).value?.isSecret == true, "snapshot \(name)")
            let watched = try await provider.watchValue(forKey: key, type: type) { updates in
                try await updates.first { _ in true }?.get().value
            }
            #expect(watched?.isSecret == true, "watch \(name)")
        }
    }

    @Test func swiftConfigurationsAccessLogRedactsEveryValue() async throws {
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "access") { _ in logs }
        logger.logLevel = .trace
        let fixture = try ProviderFixture([
            "api.token": .string(canaryValue), "api.key": .data(Data(canaryValue.utf8)),
            "api.tokens": [.string(canaryValue)], canaryKey: "unread",
        ])
        let reader = ConfigReader(provider: fixture.provider, accessReporter: AccessLogger(logger: logger))

        #expect(reader.string(forKey: "api.token") == canaryValue)  // not asked to be secret: the provider says so
        #expect(reader.bytes(forKey: "api.key") == Array(canaryValue.utf8))
        #expect(reader.stringArray(forKey: "api.tokens") == [canaryValue])
        #expect(reader.int(forKey: "api.token") == nil)  // a type mismatch, logged as an error
        #expect(try await reader.fetchString(forKey: "api.token") == canaryValue)
        let watched = try await reader.watchString(forKey: "api.token") { updates in await updates.first { _ in true } }
        #expect(watched == canaryValue)

        let logged = logs.entries.map { "\($0.message) \($0.metadata)" }
        #expect(logged.count == 6)
        #expect(logged.filter { $0.contains("<REDACTED>") }.count == 5)
        expectNoCanary(in: logged.joined(separator: "\n"), "the access log")
    }

    @Test func theProviderAndItsSnapshotsShowNoKeyOrValue() throws {
        let provider = try ProviderFixture([canaryKey: .string(canaryValue)]).provider
        let snapshot = provider.snapshot()
        var dumped = ""
        dump(provider, to: &dumped)
        dump(snapshot, to: &dumped)
        let renderings = [
            "\(provider)", String(reflecting: provider), "\(snapshot)", String(reflecting: snapshot), dumped,
            String(describing: Mirror(reflecting: snapshot).children.map { "\($0.label ?? ""):\($0.value)" }),
        ]
        expectNoCanary(in: renderings.joined(separator: "\n"), "a rendering")
        #expect("\(snapshot)".hasSuffix("[1 values]"))
    }
}
