import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

// Scenario 2, "a fault at every position": the check is SecureDictionaryTestSupport's
// FaultPositionCheck, which Tests/SecureDictionaryTests/FaultPositionTests.swift runs too.

/// Every combination of mutation, injected failure and cache state, as one row of the table.
enum FaultPositionScenario {
    static func run(_ harness: Harness, _ report: Report) {
        var positions = 0
        var problems: [String] = []
        var combinations = 0
        for mutation in FaultPositionCheck.Mutation.allCases {
            for failure in FaultPositionCheck.Failure.all {
                for stale in [false, true] {
                    let outcome = FaultPositionCheck.check(mutation, failure, stale: stale)
                    combinations += 1
                    positions += outcome.positions
                    problems += outcome.problems
                }
            }
        }
        for problem in problems.prefix(10) { log("    \(problem)") }
        let brokenPositions = Set(problems.map { $0.components(separatedBy: ":").first ?? $0 }).count
        report.add(
            "fault at every keyring call (5 mutations × 9 failures × 2 cache states)",
            target: "100 % typed error, cache == store, store old or new",
            measured: "\(positions - brokenPositions)/\(positions) positions OK (\(combinations) combinations)",
            pass: problems.isEmpty && positions > 0,
            note: problems.first)
    }
}
