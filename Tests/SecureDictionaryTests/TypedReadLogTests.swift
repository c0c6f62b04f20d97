import InMemoryLogging
import Logging
import Synchronization
import Testing

@testable import SecureDictionary

/// A non-throwing typed read that finds another type returns `nil` (or the
/// key's default), as documented, and once logged that at `error` level: on the application's
/// standard error with swift-log's default handler, as if something had failed. It is logged
/// at `debug`; a write that fails is still an error.
@Suite struct TypedReadLogTests {
    @Test func aTypedReadOfAnotherTypeIsNoError() throws {
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "test") { _ in logs }
        logger.logLevel = .trace
        let store = InMemoryKeyringStore()
        let reported = Mutex<[SecureDictionaryError]>([])
        let options = SecureDictionary.Options(
            store: store, failureHandler: { error in reported.withLock { $0.append(error) } }, logger: logger)
        let settings = try SecureDictionary(name: "typed", applicationID: "test.typed-read", options: options)
        try settings.setValue("not a number", forKey: "retries")
        let plain: Int? = settings["retries"]
        let typed = settings[SecureDictionary.Key<Int>("retries", default: 3)]
        #expect(plain == nil && typed == 3)
        let reads = logs.entries.filter { "\($0.message)".contains("typed read") }
        #expect(reads.count == 2, "\(logs.entries)")
        #expect(reads.allSatisfy { $0.level == .debug }, "\(reads.map(\.level))")
        #expect(reported.withLock { $0.count } == 2)  // still passed to the failure handler

        // A failed write through the subscript is an error, as before.
        store.failNextCalls(with: .timedOut)
        settings["other"] = "x"
        #expect(logs.entries.contains { $0.level == .error && "\($0.message)".contains("subscript write") })
    }

    /// `updates(for:)` skips an entry of another type as the typed subscript reads it: at
    /// `debug`, and to the failure handler. It once logged it at `error`.
    @Test func aTypedUpdateOfAnotherTypeIsNoError() async throws {
        let logs = InMemoryLogHandler()
        var logger = Logger(label: "test") { _ in logs }
        logger.logLevel = .trace
        let reported = Mutex<[SecureDictionaryError]>([])
        let options = SecureDictionary.Options(
            store: InMemoryKeyringStore(), failureHandler: { error in reported.withLock { $0.append(error) } }, logger: logger)
        let settings = try SecureDictionary(name: "typed", applicationID: "test.typed-update", options: options)
        let updates = settings.updates(for: SecureDictionary.Key<Int>("retries", default: 3))
        try settings.setValue("not a number", forKey: "retries")
        try settings.setValue(5, forKey: "retries")
        var iterator = updates.makeAsyncIterator()
        #expect(await iterator.next() == 5)  // the string was skipped
        let skipped = logs.entries.filter { "\($0.message)".contains("typed update") }
        #expect(skipped.count == 1, "\(logs.entries)")
        #expect(skipped.allSatisfy { $0.level == .debug }, "\(skipped.map(\.level))")
        #expect(reported.withLock { $0 } == [.typeMismatch(expected: "Int", found: "string")])
    }
}
