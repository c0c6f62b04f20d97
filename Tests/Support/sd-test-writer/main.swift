// A second process for the integration tests.
//
//   sd-test-writer write APP NAME PREFIX COUNT INCREMENTS
//       sets PREFIX-0 … PREFIX-(COUNT-1), removes every key whose index ends in 9 right after
//       setting it, increments the shared "counter" INCREMENTS times inside update { };
//       prints "ok <increments done>"; exits 1 on the first error.
//   sd-test-writer set APP NAME KEY VALUE      one setValue; prints "ok <unix time after it>"
//   sd-test-writer probe APP NAME TIMEOUT_MS   opens the dictionary; prints "ok <count>" or
//                                              "error <case>" and the elapsed milliseconds
//   sd-test-writer get APP NAME KEY            prints "ok <string value>", "absent" or "error <case>"
//   sd-test-writer move APP NAME               moves the dictionary from the Secret Service to the
//                                              Secret portal's files: "ok moved", "ok absent" or "error <case>"
//
// With SD_TEST_WRITER_STORE=portal, dictionaries live in SecretPortalStore.shared (the
// Secret portal's encrypted files) instead of the Secret Service; SD_TEST_WRITER_TIMEOUT_MS
// sets the timeout of set, get and move.
import Foundation
import SecureDictionary
import SecureDictionaryFileStore
import SecureDictionaryTestSupport

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("sd-test-writer: \(message)\n".utf8))
    exit(1)
}

/// The store named by SD_TEST_WRITER_STORE.
let store: any KeyringStore =
    ProcessInfo.processInfo.environment["SD_TEST_WRITER_STORE"] == "portal" ? SecretPortalStore.shared : SecretServiceStore.shared

/// The options of every command; SD_TEST_WRITER_TIMEOUT_MS replaces the default timeout.
func options(timeout: Duration? = nil) -> SecureDictionary.Options {
    let given = ProcessInfo.processInfo.environment["SD_TEST_WRITER_TIMEOUT_MS"].flatMap(Int.init).map(Duration.milliseconds)
    return SecureDictionary.Options(timeout: timeout ?? given ?? .seconds(3), store: store)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard let command = arguments.first else { fail("no command") }

do {
    switch command {
    case "write" where arguments.count == 6:
        let (app, name, prefix) = (arguments[1], arguments[2], arguments[3])
        guard let count = Int(arguments[4]), let increments = Int(arguments[5]) else { fail("bad numbers") }
        let options = options(timeout: .seconds(20))
        // Two instances of the same item, used alternately: they must share state.
        let instances = try (0..<2).map { _ in try SecureDictionary(name: name, applicationID: app, options: options) }
        var done = 0
        for index in 0..<max(count, increments) {
            let dictionary = instances[index % 2]
            if index < count {
                try dictionary.setValue(.integer(index), forKey: "\(prefix)-\(index)")
                if index % 10 == 9 { try dictionary.removeValue(forKey: "\(prefix)-\(index)") }
            }
            if index < increments {
                try dictionary.update { entries in
                    entries["counter"] = .integer((entries["counter"]?.integerValue ?? 0) + 1)
                }
                done += 1
            }
            usleep(UInt32.random(in: 0...2_000))  // jitter
        }
        print("ok \(done)")
    case "fill" where arguments.count == 5:
        // Sets PREFIX-0 … PREFIX-(COUNT-1) back to back, one write each: "ok COUNT" when every
        // write was acknowledged.
        guard let count = Int(arguments[4]) else { fail("bad count") }
        let dictionary = try SecureDictionary(
            name: arguments[2], applicationID: arguments[1], options: options(timeout: .seconds(20)))
        for index in 0..<count { try dictionary.setValue(.integer(index), forKey: "\(arguments[3])-\(index)") }
        print("ok \(count)")
    case "set" where arguments.count == 5:
        let dictionary = try SecureDictionary(name: arguments[2], applicationID: arguments[1], options: options())
        try dictionary.setValue(.string(arguments[4]), forKey: arguments[3])
        print("ok \(Date().timeIntervalSince1970)")  // when the write returned, for delay figures
    case "probe" where arguments.count == 4:
        let timeout = Duration.milliseconds(Int(arguments[3]) ?? 3_000)
        let start = ContinuousClock.now
        do {
            let dictionary = try SecureDictionary(
                name: arguments[2], applicationID: arguments[1], options: options(timeout: timeout))
            print("ok \(dictionary.count)")
        } catch {
            let elapsed = ContinuousClock.now - start
            let milliseconds = elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000
            print("error \(caseName(error)) \(milliseconds)")
        }
    case "get" where arguments.count == 4:
        do {
            let dictionary = try SecureDictionary(name: arguments[2], applicationID: arguments[1], options: options())
            print(dictionary[arguments[3]]?.stringValue.map { "ok \($0)" } ?? "absent")
        } catch {
            print("error \(caseName(error))")
        }
    case "move" where arguments.count == 3:
        do {
            let moved = try SecureDictionary.move(
                name: arguments[2], applicationID: arguments[1], from: SecretServiceStore.shared,
                to: SecretPortalStore.shared, timeout: options().timeout)
            print(moved ? "ok moved" : "ok absent")
        } catch {
            print("error \(caseName(error))")
        }
    case "hold" where arguments.count == 3:
        // Takes the item's writer lock and keeps it: prints "holding PID", then sleeps inside
        // update { } until killed. For the test that stops a lock holder.
        let dictionary = try SecureDictionary(
            name: arguments[2], applicationID: arguments[1], options: options(timeout: .seconds(30)))
        try dictionary.update { _ in
            print("holding \(getpid())")
            fflush(nil)
            sleep(600)
        }
    default:
        fail(
            "usage: write APP NAME PREFIX COUNT INCREMENTS | set APP NAME KEY VALUE | probe APP NAME TIMEOUT_MS | get APP NAME KEY | move APP NAME | hold APP NAME"
        )
    }
} catch {
    fail("\(error)")
}
