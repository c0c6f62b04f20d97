import SecureDictionaryTestSupport
import Testing

// A fault at every position (the reliability suite's scenario 2). The check itself lives in
// SecureDictionaryTestSupport, which the reliability suite runs too.

@Suite("A fault at every keyring call")
struct FaultPositionTests {
    struct Combination: Sendable, CustomTestStringConvertible {
        var mutation: FaultPositionCheck.Mutation
        var failure: FaultPositionCheck.Failure
        var stale: Bool
        var testDescription: String { "\(mutation.rawValue) × \(failure) × \(stale ? "stale cache" : "current cache")" }
    }

    static let combinations: [Combination] = FaultPositionCheck.Mutation.allCases.flatMap { mutation in
        FaultPositionCheck.Failure.all.flatMap { failure in
            [false, true].map { Combination(mutation: mutation, failure: failure, stale: $0) }
        }
    }

    @Test(
        "fail the Nth keyring call, N = 1… until it succeeds: typed error, cache == store, store old or new",
        arguments: FaultPositionTests.combinations)
    func everyPosition(_ combination: Combination) {
        let outcome = FaultPositionCheck.check(combination.mutation, combination.failure, stale: combination.stale)
        #expect(outcome.positions >= (combination.stale ? 2 : 1), "too few positions were hit")
        for problem in outcome.problems { Issue.record(Comment(rawValue: problem)) }
    }
}
