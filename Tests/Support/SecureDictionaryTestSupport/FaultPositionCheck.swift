// A fault at every keyring call (the reliability suite's scenario 2). One implementation, run by
// `scripts/test` (Tests/SecureDictionaryTests/FaultPositionTests.swift) and by the
// reliability suite (Reliability/…/Scenarios/FaultPositions.swift), which reports its figure.
import Foundation
import Logging
public import SecureDictionary

/// For one mutation kind, one injected failure and one starting state, fails the Nth keyring
/// call for N = 1, 2, … until the operation succeeds, and checks every position.
public enum FaultPositionCheck {
    public enum Mutation: String, CaseIterable, Sendable {
        case insert, overwrite, remove, removeAll, update
    }

    public struct Failure: Sendable, CustomStringConvertible {
        public var name: String
        public var error: SecureDictionaryError
        public var writesAnyway: Bool
        public var description: String { writesAnyway ? "\(name) (written anyway)" : name }

        /// A write that failed like this may have reached the keyring.
        public var outcomeUnknown: Bool {
            switch error {
            case .timedOut, .connectionLost, .cancelled: true
            default: false
            }
        }

        public static let all: [Failure] = [
            Failure(name: "locked", error: .locked, writesAnyway: false),
            Failure(name: "serviceUnavailable", error: .serviceUnavailable(reason: "injected"), writesAnyway: false),
            Failure(name: "timedOut", error: .timedOut, writesAnyway: false),
            Failure(name: "timedOut", error: .timedOut, writesAnyway: true),
            Failure(name: "connectionLost", error: .connectionLost, writesAnyway: false),
            Failure(name: "connectionLost", error: .connectionLost, writesAnyway: true),
            Failure(name: "cancelled", error: .cancelled, writesAnyway: false),
            Failure(name: "cancelled", error: .cancelled, writesAnyway: true),
            Failure(
                name: "rejected",
                error: .keyring(
                    domain: "org.freedesktop.Secret.Error", code: 1,
                    message: "write rejected"), writesAnyway: false),
        ]
    }

    public struct Outcome: Sendable {
        /// Positions where the injected fault was hit.
        public var positions = 0
        /// What went wrong, one line per broken position.
        public var problems: [String] = []
    }

    static let initial: [String: PropertyListValue] = [
        "a": 1, "b": "two", "c": .data(Data([0, 1, 2, 3])), "d": ["x": true],
    ]

    static func apply(_ mutation: Mutation, to entries: inout [String: PropertyListValue]) {
        switch mutation {
        case .insert: entries["new"] = "inserted"
        case .overwrite: entries["b"] = "overwritten"
        case .remove: entries["a"] = nil
        case .removeAll: entries.removeAll()
        case .update:
            entries["a"] = .integer((entries["a"]?.integerValue ?? 0) + 1)
            entries["c"] = nil
            entries["e"] = [1, 2.5]
        }
    }

    static func perform(_ mutation: Mutation, on dictionary: SecureDictionary) throws {
        switch mutation {
        case .insert: try dictionary.setValue("inserted", forKey: "new")
        case .overwrite: try dictionary.setValue("overwritten", forKey: "b")
        case .remove: try dictionary.removeValue(forKey: "a")
        case .removeAll: try dictionary.removeAll()
        case .update: try dictionary.update { apply(.update, to: &$0.dictionary) }
        }
    }

    static func decoded(_ bytes: [UInt8]?) -> [String: PropertyListValue]? {
        bytes.flatMap { try? BinaryPropertyListCoding.decode(Data($0)) }
    }

    /// Runs every position of one combination. `stale`: an earlier write of the instance timed
    /// out (outcome unknown), so the mutation must load before it writes (one more keyring call
    /// to fail).
    public static func check(_ mutation: Mutation, _ failure: Failure, stale: Bool) -> Outcome {
        var outcome = Outcome()
        let logger = Logger(label: "fault-positions") { _ in SwiftLogNoOpLogHandler() }
        var expected = initial
        apply(mutation, to: &expected)
        for position in 1...10 {
            let label = "\(mutation.rawValue) × \(failure) × \(stale ? "stale" : "current") × call \(position)"
            func problem(_ text: String) { outcome.problems.append("\(label): \(text)") }
            let store = InMemoryKeyringStore()
            let options = SecureDictionary.Options(store: store, failureHandler: { _ in }, logger: logger)
            let dictionary: SecureDictionary
            let item: KeyringItem
            do {
                dictionary = try SecureDictionary(name: "faults", applicationID: "reliability.faults", options: options)
                item = dictionary.item
                try dictionary.update { $0.dictionary = initial }
            } catch {
                problem("setup failed: \(error)")
                return outcome
            }
            if stale {
                store.failCall(number: 2, with: .timedOut)  // the write after its check
                if (try? dictionary.setValue("unknown", forKey: "stale")) != nil {
                    problem("the stale setup's write went through")
                }
                store.clearFaults()
            }
            let before = store.storedBytes(of: item)
            store.failCall(number: position, with: failure.error, writesAnyway: failure.writesAnyway)
            let callsBefore = store.calls.count
            var thrown: (any Error)?
            do { try perform(mutation, on: dictionary) } catch { thrown = error }
            let callsMade = store.calls.count - callsBefore
            store.clearFaults()
            let hit = position <= callsMade
            let after = store.storedBytes(of: item)

            // The store is never empty, partial or undecodable: old or new, nothing else.
            guard let stored = decoded(after) else {
                problem(after == nil ? "the item vanished" : "the stored blob does not decode")
                continue
            }
            if stored != initial && stored != expected { problem("the store holds neither the old nor the new entries") }

            guard let thrown else {
                if hit {
                    // The fault was hit and yet the operation succeeded: only a retry can do that.
                    if stored != expected { problem("succeeded after a fault, but the store lacks the change") }
                    outcome.positions += 1
                    continue
                }
                if stored != expected { problem("succeeded, but the store lacks the change") }
                if dictionary.snapshot != expected { problem("succeeded, but the cache lacks the change") }
                break  // N is past the last call: every position has been tried
            }
            outcome.positions += 1
            guard let typed = thrown as? SecureDictionaryError, typed == failure.error else {
                problem("threw \(thrown) instead of the injected \(failure.name)")
                continue
            }
            if !hit { problem("threw although the fault was never hit") }
            if !failure.outcomeUnknown || !failure.writesAnyway {
                // Nothing reached the store.
                if after != before { problem("the store changed after a failed write") }
            }
            // The call that failed: a check of the stored item (a load) or the write itself.
            let failedCall = store.calls[callsBefore + position - 1]
            let unknownWrite = failure.outcomeUnknown && failedCall == .store
            // Non-throwing reads answer from the cache, never load: equal to the store, except
            // after a write with an unknown outcome, where they keep what was known before it.
            if !stale && !unknownWrite && dictionary.snapshot != stored {
                problem("cache != store after the failure")
            }
            // A throwing read loads when needed, and then equals the store.
            let callsBeforeRead = store.calls.count
            do {
                if try dictionary.entries() != stored { problem("entries() != store after the failure") }
            } catch {
                problem("entries() failed after the failure: \(error)")
            }
            let reloaded = store.calls.count > callsBeforeRead
            // A write with an unknown outcome: the instance must not trust its cache, the next
            // throwing read reloads. (A failed load leaves nothing unknown: nothing was written.)
            if unknownWrite && !reloaded { problem("the next throwing read did not reload after an unknown outcome") }
            // And the instance works again.
            do {
                try dictionary.setValue("after", forKey: "resume")
                if decoded(store.storedBytes(of: item))?["resume"] != "after" { problem("the next write was lost") }
            } catch {
                problem("the next write failed: \(error)")
            }
        }
        return outcome
    }
}
