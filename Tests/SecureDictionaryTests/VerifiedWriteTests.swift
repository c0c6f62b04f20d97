import Testing

@testable import SecureDictionary

/// VerifiedWrite: what one write's tries leave in the item, as far as putting it back and
/// reporting an unknown outcome are concerned (LibSecretClient.store).
@Suite struct VerifiedWriteTests {
    @Test func aTryTheKeyringRefusedStoredNothing() {
        let attempt = VerifiedWrite()
        attempt.sending(onVerifiedSession: false)  // then answered "locked": no stored()
        #expect(attempt.mayHaveDamaged)
        #expect(!attempt.unconfirmedWriteStored)
    }

    @Test func aStoredTryStandsUnconfirmedUntilItsReadBackMatches() {
        let attempt = VerifiedWrite()
        attempt.sending(onVerifiedSession: false)
        attempt.stored()
        #expect(attempt.unconfirmedWriteStored)
        attempt.readBackMatches()
        #expect(!attempt.unconfirmedWriteStored && !attempt.mayHaveDamaged)
    }

    @Test func aStoredUnconfirmedTryStillStandsWhenALaterTryIsRefused() {
        let attempt = VerifiedWrite()
        attempt.sending(onVerifiedSession: false)
        attempt.stored()
        attempt.readBackDiffers()
        attempt.sending(onVerifiedSession: false)  // a new session, refused
        #expect(attempt.unconfirmedWriteStored)
    }

    @Test func aTryOnAProvenSessionIsNeverUnconfirmed() {
        let attempt = VerifiedWrite()
        attempt.sending(onVerifiedSession: true)
        attempt.stored()
        #expect(!attempt.unconfirmedWriteStored && !attempt.mayHaveDamaged)
    }
}
