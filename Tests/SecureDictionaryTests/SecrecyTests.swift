import Foundation
import InMemoryLogging
import Logging
import Testing

@testable import SecureDictionary

/// "Secrets stay secret": keys and values never reach logs, descriptions, dumps, mirrors or errors.
@Suite struct SecrecyTests {
    // Built at run time so the canary is not a literal the binary happens to contain.
    let canaryKey = "key-" + String(UUID().uuidString.reversed())
    let canaryValue = "value-" + String(UUID().uuidString.reversed())

    /// The canary and the encodings a careless message might use.
    func forms(_ text: String) -> [String] {
        let bytes = Data(text.utf8)
        return [text, bytes.base64EncodedString(), bytes.map { String(format: "%02x", $0) }.joined()]
    }

    func expectNoCanary(in text: String, _ context: String) {
        for form in forms(canaryKey) + forms(canaryValue) {
            #expect(!text.contains(form), "\(context) contains a canary form")
        }
    }

    @Test func noCanaryInAnyRendering() throws {
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "test") { _ in logs }
        logger.logLevel = .trace
        let store = InMemoryKeyringStore()
        let options = SecureDictionary.Options(store: store, failureHandler: { _ in }, logger: logger)
        let settings = try SecureDictionary(name: "secrecy", applicationID: "test.secrecy", options: options)

        try settings.setValue(.string(canaryValue), forKey: canaryKey)
        try settings.setValue(.data(Data(canaryValue.utf8)), forKey: canaryKey + "-data")
        try settings.update { $0[canaryKey + "-nested"] = [.string(canaryValue)] }
        store.failNextCalls(with: .timedOut)
        settings[canaryKey] = .string(canaryValue + "2")  // logged failure
        _ = settings[canaryKey]  // reload after unknown outcome
        store.failNextCalls(with: .keyring(domain: "d", code: 1, message: "rejected"))
        #expect(throws: SecureDictionaryError.self) { try settings.setValue(.string(self.canaryValue), forKey: "x") }

        let canaryKeyConstant = SecureDictionary.Key<String?>(canaryKey)
        let change = SecureDictionary.Change(key: canaryKey, kind: .updated, oldValue: .string(canaryValue), newValue: nil)
        var dumpedKeyAndChange = ""
        dump(canaryKeyConstant, to: &dumpedKeyAndChange)
        dump(change, to: &dumpedKeyAndChange)
        expectNoCanary(in: dumpedKeyAndChange + "\(canaryKeyConstant) \(change) \(String(reflecting: change))", "Key and Change")

        var dumped = ""
        dump(settings, to: &dumped)
        var dumpedValue = ""
        dump(settings[canaryKey], to: &dumpedValue)
        let renderings = [
            ("description", settings.description), ("debugDescription", settings.debugDescription),
            ("dump", dumped), ("dump of a value", dumpedValue),
            ("Mirror", String(describing: Mirror(reflecting: settings).children.map { "\($0.label ?? ""):\($0.value)" })),
            ("value description", "\(settings[canaryKey]!) \(String(reflecting: settings[canaryKey]!))"),
            ("value Mirror", String(describing: Mirror(reflecting: settings[canaryKey]!).children.map(\.value))),
            ("logs", logs.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")),
        ]
        for (context, text) in renderings { expectNoCanary(in: text, context) }
        #expect(!logs.entries.isEmpty)  // the log check saw something
        #expect(settings.description.contains("test.secrecy.__SecureDictionary__.secrecy"))
    }

    @Test func corruptErrorsDoNotEchoTheBlob() throws {
        let store = InMemoryKeyringStore()
        let item = try KeyringItem(dictionaryName: "hostile", applicationID: "test.secrecy")
        var blob = Array("bplist00".utf8) + Array(canaryValue.utf8) + Array(canaryKey.utf8)
        blob += [UInt8](repeating: 0xFF, count: 40)
        store.plant(blob, for: item)
        do {
            _ = try SecureDictionary(name: "hostile", applicationID: "test.secrecy", options: .init(store: store))
            Issue.record("a hostile blob loaded")
        } catch {
            expectNoCanary(in: "\(error) \(String(reflecting: error))", "error")
        }
    }
}
