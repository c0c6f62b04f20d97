import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// `sd-reliability worker COMMAND …`: the second process of a scenario. Each prints a
/// `WorkerReply` as JSON on its last stdout line. Hidden: only the runner calls these.
enum Worker {
    static func main(_ arguments: [String]) -> Never {
        guard let command = arguments.first else { usage() }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "open": open(rest)
        case "lost-writer": lostWriter(rest)
        case "set": set(rest)
        case "kill-mutate": killMutate(rest)
        case "fuzz": fuzz(rest)
        case "secrecy": secrecy(rest)
        case "hygiene": hygiene(rest)
        case "burst": burst(rest)
        case "hold": hold(rest)
        case "files": files(rest)
        case "bus-writes": busWrites(rest)
        case "auto-writes": autoWrites(rest)
        default: usage()
        }
        exit(0)
    }

    static func usage() -> Never {
        FileHandle.standardError.write(Data("sd-reliability worker: bad arguments (internal use only)\n".utf8))
        exit(2)
    }

    /// `open APP NAME TIMEOUT_MS [MAXIMUM_SIZE]`: opens the dictionary with a new store and
    /// prints the outcome and the open's own duration.
    static func open(_ arguments: [String]) {
        guard arguments.count >= 3, let timeout = Int(arguments[2]) else { usage() }
        var options = SecureDictionary.Options(timeout: .milliseconds(timeout), store: SecretServiceStore())
        if arguments.count > 3, let maximum = Int(arguments[3]) { options.maximumSize = maximum }
        let start = ContinuousClock.now
        do {
            let dictionary = try SecureDictionary(name: arguments[1], applicationID: arguments[0], options: options)
            let milliseconds = elapsedMilliseconds(since: start)
            WorkerReply(outcome: "ok", milliseconds: milliseconds, count: dictionary.count).print()
        } catch {
            let milliseconds = elapsedMilliseconds(since: start)
            WorkerReply(outcome: "error", error: caseName(error), milliseconds: milliseconds).print()
        }
    }
}
