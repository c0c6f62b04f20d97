import Foundation
import Logging
import SecureDictionary
import SecureDictionaryTestSupport
import Synchronization

// Scenario 8's second process: the canary goes through every API and error path here.

/// Writes every log record, at trace level, to a file.
struct FileLogHandler: LogHandler {
    let sink: FileSink
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
        file: String, function: String, line: UInt
    ) {
        let all = self.metadata.merging(metadata ?? [:]) { $1 }
        sink.write("\(level) \(source) \(message) \(all)\n")
    }
}

final class FileSink: Sendable {
    private let handle: Mutex<FileHandle?>
    init(_ path: String) {
        FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        handle = Mutex(FileHandle(forWritingAtPath: path))
    }
    func write(_ text: String) { handle.withLock { try? $0?.write(contentsOf: Data(text.utf8)) } }
}

extension Worker {
    /// `secrecy APP CANARY_FILE LOG_FILE RENDER_FILE`: the canary workload of scenario 8.
    static func secrecy(_ arguments: [String]) {
        guard arguments.count == 4, let text = try? String(contentsOfFile: arguments[1], encoding: .utf8) else { usage() }
        let lines = text.split(separator: "\n").map(String.init)
        guard lines.count == 2 else { usage() }
        let workload = SecrecyWorkload(
            app: arguments[0], key: lines[0], value: lines[1],
            logs: FileSink(arguments[2]), renderings: FileSink(arguments[3]))
        workload.run()
        let fine = workload.problems.isEmpty
        WorkerReply(
            outcome: fine ? "ok" : "error", error: workload.problems.first,
            detail: "\(workload.steps) API calls, \(workload.errorCases.count) error cases "
                + "(\(workload.errorCases.sorted().joined(separator: ", ")))"
        ).print()
    }
}

/// Everything a program might do with a secret, and every way it can fail.
final class SecrecyWorkload: @unchecked Sendable {  // used from one thread (and one awaited task)
    let app: String
    let key: String
    let value: String
    let renderings: FileSink
    let logger: Logger
    let failures = Box<[SecureDictionaryError]>([])
    var problems: [String] = []
    var steps = 0
    var errorCases: Set<String> = []
    let daemon: String

    init(app: String, key: String, value: String, logs: FileSink, renderings: FileSink) {
        self.app = app
        self.key = key
        self.value = value
        self.renderings = renderings
        var logger = Logger(label: "sd-reliability.secrecy") { _ in FileLogHandler(sink: logs) }
        logger.logLevel = .trace
        self.logger = logger
        daemon = Runner.findRoot().map { $0.appendingPathComponent("scripts/keyring-daemon").path } ?? "scripts/keyring-daemon"
    }

    func options(
        _ store: any KeyringStore = SecretServiceStore.shared, maximumSize: Int = SecureDictionary.Options.defaultMaximumSize
    )
        -> SecureDictionary.Options
    {
        SecureDictionary.Options(
            timeout: .seconds(1), maximumSize: maximumSize, store: store,
            failureHandler: { [failures] error in failures.modify { $0.append(error) } },
            logger: logger)
    }

    func render(_ title: String, _ thing: Any) {
        var dumped = ""
        dump(thing, to: &dumped)
        let mirror = Mirror(reflecting: thing).children.map { "\($0.label ?? "_"): \(String(describing: $0.value))" }
        renderings.write("\n=== \(title)\n\(String(describing: thing))\n\(String(reflecting: thing))\n\(dumped)\n\(mirror)\n")
    }

    func renderError(_ title: String, _ error: any Error) {
        errorCases.insert(caseName(error))
        var dumped = ""
        dump(error, to: &dumped)
        renderings.write(
            "\n=== error \(title): \(caseName(error))\n\(error)\n\(String(reflecting: error))\n\(dumped)\n"
                + "\(error.localizedDescription)\n")
    }

    /// Runs `body`, which must throw; renders the error.
    func expectError(_ title: String, _ body: () throws -> Void) {
        steps += 1
        do {
            try body()
            problems.append("\(title): no error")
        } catch {
            renderError(title, error)
        }
    }

    func step(_ title: String, _ body: () throws -> Void) {
        steps += 1
        do { try body() } catch {
            renderError(title, error)
            problems.append("\(title): \(caseName(error))")
        }
    }

    func keyringDaemon(_ command: String) {
        let result = Subprocess.run(daemon, [command], timeout: .seconds(30))
        if !result.succeeded { problems.append("keyring-daemon \(command): \(result.how)") }
    }

    func awaitResult<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = Box<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            box.value = await body()
            done.signal()
        }
        done.wait()
        return box.value!
    }

    func run() {
        let (key, value) = (self.key, self.value)
        var dictionary: SecureDictionary?
        step("open") { dictionary = try SecureDictionary(name: "canary", applicationID: app, options: options()) }
        guard let dictionary else { return }

        // Every API, with the canary as key and as value.
        step("setValue string") { try dictionary.setValue(.string(value), forKey: key) }
        step("setValue data") { try dictionary.setValue(.data(Data(value.utf8)), forKey: key + "-data") }
        step("subscript set") { dictionary[key + "-sub"] = .string(value) }
        step("update") {
            try dictionary.update { $0[key + "-nested"] = .array([.string(value), .dictionary([key: .string(value)])]) }
        }
        step("reads") {
            render("subscript get", dictionary[key] as Any)
            render("value(forKey:)", try dictionary.value(forKey: key) as Any)
            render("nested value", dictionary[key + "-nested"] as Any)
            render("data value", dictionary[key + "-data"] as Any)
            // (a [String: Value] of the caller's own shows its keys, as any Dictionary does:
            // only the library's own types are rendered here)
            for entry in dictionary.snapshot.values { render("snapshot value", entry) }
            for (_, entry) in dictionary { render("iterated value", entry) }
        }
        let typedKey = SecureDictionary.Key<String?>(key)
        step("typed keys") {
            try dictionary.set(value + "-typed", for: typedKey)
            // What they return is the caller's own String: only the library's Key is rendered.
            _ = dictionary[typedKey]
            _ = try dictionary.value(for: typedKey)
            render("typed key (SecureDictionary.Key)", typedKey)
        }
        expectError("typed read of the wrong type") { _ = try dictionary.value(for: SecureDictionary.Key<Int>(key, default: 0)) }
        _ = dictionary[SecureDictionary.Key<Int>(key, default: 0)]  // logged and reported: a wrong type
        step("changes()") {
            let stream = dictionary.changes()
            let first = Box<SecureDictionary.Change?>(nil)
            let received = DispatchSemaphore(value: 0)
            let task = Task {
                for await change in stream {
                    first.value = change
                    received.signal()
                    break
                }
            }
            try dictionary.setValue(.string(value + "-changed"), forKey: key)
            if received.wait(timeout: .now() + 5) == .success, let change = first.value {
                render("Change (SecureDictionary.Change)", change)
                render("Change.kind", change.kind)
            } else {
                problems.append("changes(): no change arrived")
            }
            task.cancel()
        }
        step("async") {
            let outcome: Result<Int, any Error> = awaitResult { [self] in
                do {
                    let opened = try await SecureDictionary.Async.open(name: "async", applicationID: app, options: options())
                    try await opened.async.setValue(.string(value), forKey: key)
                    _ = try await opened.async.value(forKey: key)
                    _ = try await opened.async.update { $0[key + "-async"] = .string(value) }
                    try await opened.async.reload()
                    return .success(opened.count)
                } catch {
                    return .failure(error)
                }
            }
            _ = try outcome.get()
        }
        step("listing") {
            render("names", try SecureDictionary.names(applicationID: app, options: options()))
            render("items", try SecureDictionary.items(applicationID: app, options: options()))
        }
        step("remove, reload") {
            render("removeValue", try dictionary.removeValue(forKey: key + "-sub") as Any)
            try dictionary.reload()
            render("value after reload", try dictionary.value(forKey: key) as Any)
        }
        render("dictionary", dictionary)
        render("item", dictionary.item)
        render("options", dictionary.options)

        // Error paths against the real keyring.
        keyringDaemon("lock")
        expectError("write while locked") { try dictionary.setValue(.string(value + "-locked"), forKey: key) }
        dictionary[key] = .string(value + "-subscript-locked")  // logged + failureHandler
        expectError("reload while locked") { try dictionary.reload() }
        expectError("open while locked") {
            _ = try SecureDictionary(name: "canary", applicationID: app, options: options(SecretServiceStore()))
        }
        keyringDaemon("unlock")
        keyringDaemon("freeze")
        expectError("write while frozen") { try dictionary.setValue(.string(value + "-frozen"), forKey: key) }
        dictionary[key + "-sub"] = .string(value + "-subscript-frozen")
        keyringDaemon("thaw")
        step("read after the timeout") { render("reloaded", try dictionary.value(forKey: key) as Any) }
        expectError("open a corrupt item holding the canary") {
            _ = try SecureDictionary(name: "corrupt", applicationID: app, options: options())
        }
        expectError("open an ambiguous item") {
            _ = try SecureDictionary(name: "ambiguous", applicationID: app, options: options())
        }
        expectError("too large") {
            let small = try SecureDictionary(name: "big", applicationID: app, options: options(maximumSize: 200))
            try small.setValue(.string(String(repeating: value, count: 10)), forKey: key)
        }
        expectError("too deep") {
            var deep = PropertyListValue.string(value)
            for _ in 0..<70 { deep = .array([deep]) }
            try dictionary.setValue(deep, forKey: key)
        }

        // Every failure a store can report, through the in-memory store.
        let store = InMemoryKeyringStore()
        var memory: SecureDictionary?
        step("in-memory open") { memory = try SecureDictionary(name: "canary", applicationID: app, options: options(store)) }
        if let memory {
            step("in-memory write") { try memory.setValue(.string(value), forKey: key) }
            let injected: [SecureDictionaryError] = [
                .locked, .serviceUnavailable(reason: "injected"), .timedOut, .connectionLost, .cancelled,
                .keyring(domain: "org.freedesktop.Secret.Error", code: 1, message: "rejected"),
            ]
            for error in injected {
                store.failNextCalls(with: error)
                expectError("injected \(caseName(error))") { try memory.update { $0[key] = .string(value + "-again") } }
                store.failNextCalls(with: error)
                memory[key + "-sub"] = .string(value)
                _ = memory[key]
            }
            store.plantBlob(Array("bplist00".utf8) + Array(value.utf8) + [UInt8](repeating: 0xEE, count: 40), for: memory.item)
            expectError("in-memory corrupt") { try memory.reload() }
            render("in-memory dictionary", memory)
        }
        for (index, error) in failures.value.enumerated() { renderError("failureHandler \(index)", error) }
        step("delete") { _ = try SecureDictionary.delete(name: "canary", applicationID: app, options: options()) }
    }
}
