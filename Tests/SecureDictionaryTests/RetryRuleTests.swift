import Testing

@testable import SecureDictionary

/// LibSecretClient.failure(after:…): which failed tries go again on a fresh connection.
@Suite struct RetryRuleTests {
    @Test func aLostConnectionIsTriedAgainUntilTheLastAttempt() {
        #expect(LibSecretClient.failure(after: .connectionLost, attempt: 1, outcomeUnknown: true) == nil)
        let last = LibSecretConnection.sessionAttempts
        #expect(LibSecretClient.failure(after: .connectionLost, attempt: last, outcomeUnknown: true) == .connectionLost)
    }

    @Test func anErrorThatNeedsNoFreshConnectionEndsTheCallAsItIs() {
        #expect(LibSecretClient.failure(after: .locked, attempt: 1, outcomeUnknown: false) == .locked)
    }

    @Test func aWriteWhoseFirstTryDiedWithTheConnectionStaysUnknown() {
        #expect(LibSecretClient.failure(after: .locked, attempt: 2, outcomeUnknown: true) == .connectionLost)
    }
}
