import Testing

@testable import SecureDictionary

/// LibSecretClient.failure(after:…): which failed tries go again on a fresh connection, and
/// that a write which handed the writer lock on is never tried again (BusNameWriterLock rule 5).
@Suite struct RetryRuleTests {
    @Test func aLostConnectionIsTriedAgainUntilTheLastAttempt() {
        #expect(LibSecretClient.failure(after: .connectionLost, attempt: 1, outcomeUnknown: true, lockHandedOn: false) == nil)
        let last = LibSecretConnection.sessionAttempts
        #expect(
            LibSecretClient.failure(after: .connectionLost, attempt: last, outcomeUnknown: true, lockHandedOn: false)
                == .connectionLost)
    }

    @Test func aWriteThatHandedTheLockOnIsNotTriedAgainAndItsOutcomeIsUnknown() {
        #expect(
            LibSecretClient.failure(after: .connectionLost, attempt: 1, outcomeUnknown: true, lockHandedOn: true)
                == .connectionLost)
        #expect(
            LibSecretClient.failure(
                after: .sessionRejected(reason: "test"), attempt: 1, outcomeUnknown: false, lockHandedOn: true)
                == .connectionLost)
    }

    @Test func anErrorThatNeedsNoFreshConnectionEndsTheCallAsItIs() {
        #expect(LibSecretClient.failure(after: .locked, attempt: 1, outcomeUnknown: false, lockHandedOn: true) == .locked)
        #expect(LibSecretClient.failure(after: .locked, attempt: 1, outcomeUnknown: false, lockHandedOn: false) == .locked)
    }

    @Test func aWriteWhoseFirstTryDiedWithTheConnectionStaysUnknown() {
        #expect(LibSecretClient.failure(after: .locked, attempt: 2, outcomeUnknown: true, lockHandedOn: false) == .connectionLost)
    }
}
