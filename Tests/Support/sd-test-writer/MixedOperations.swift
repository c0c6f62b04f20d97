import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Synchronization

/// `sd-test-writer mixed APP NAME`: the one process whose connections and transport sessions
/// ConnectionCountTests counts on the bus. 100 operations of the kinds an app makes, on two
/// dictionaries (NAME and NAME-b) of `options.store`, with a change stream open on NAME:
/// writes, reads from the keyring (`reload`), `update`, removals, listings, and a `move` of
/// NAME-b to an in-memory store and back. Before operation 50 it prints "restart" and waits
/// for a line on standard input (the test restarts the daemon meanwhile); operation 50 is the
/// reload after that restart. Then it prints "done ops=100 errors=CASE:N,… changes=N" and
/// waits for its standard input to end, so that the test can ask the bus which connections
/// are its own. An operation's error is counted, not fatal: with KeePassXC asking to confirm
/// access, every operation after its restart is refused.
enum MixedOperations {
    static let count = 100
    static let restartBefore = 50

    /// Change events the stream delivered.
    private final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    static func run(app: String, name: String, options: SecureDictionary.Options) throws {
        let first = try SecureDictionary(name: name, applicationID: app, options: options)
        var second = try SecureDictionary(name: "\(name)-b", applicationID: app, options: options)
        let changes = Counter()
        let stream = first.changes()
        let watching = Task.detached {
            for await _ in stream { changes.value.add(1, ordering: .relaxed) }
        }
        let memory = InMemoryKeyringStore()
        var errors: [String: Int] = [:]
        // Operations 0 and 1 opened the two dictionaries.
        for index in 2..<count {
            if index == restartBefore {
                print("restart")
                fflush(nil)
                guard readLine() != nil else { fail("standard input ended before the restart was done") }
            }
            do {
                switch index {
                case restartBefore: try first.reload()
                case 20:
                    try SecureDictionary.move(
                        name: second.item.dictionaryName, applicationID: app, from: options.store, to: memory,
                        timeout: options.timeout)
                case 21:
                    try SecureDictionary.move(
                        name: second.item.dictionaryName, applicationID: app, from: memory, to: options.store,
                        timeout: options.timeout)
                    // Open dictionaries keep their caches across a move: open it again.
                    second = try SecureDictionary(name: "\(name)-b", applicationID: app, options: options)
                case _ where index % 10 == 9:
                    _ = try SecureDictionary.names(applicationID: app, options: options)
                default:
                    try step(index, first, second)
                }
            } catch {
                errors[caseName(error), default: 0] += 1
            }
        }
        // Writes of this process reach the stream too: wait (a little) for the first.
        for _ in 0..<100 where changes.value.load(ordering: .relaxed) == 0 { usleep(50_000) }
        watching.cancel()
        let tally = errors.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
        print("done ops=\(count) errors=\(tally) changes=\(changes.value.load(ordering: .relaxed))")
        fflush(nil)
        while readLine() != nil {}
    }

    /// One plain operation: a write, a read from the keyring, an `update`, a write to the
    /// second dictionary, or a removal.
    private static func step(_ index: Int, _ first: SecureDictionary, _ second: SecureDictionary) throws {
        switch index % 5 {
        case 0: try first.setValue(.integer(index), forKey: "k\(index % 7)")
        case 1: try first.reload()
        case 2:
            try first.update { entries in
                entries["counter"] = .integer((entries["counter"]?.integerValue ?? 0) + 1)
            }
        case 3: try second.setValue(.string("v\(index)"), forKey: "b\(index % 3)")
        default: _ = try first.removeValue(forKey: "k\((index + 3) % 7)")
        }
    }
}
