import Logging

/// How one call is to be made: its deadline and the size limits.
struct OperationContext: Sendable {
    /// The time one public call may take in all, waits included.
    var timeout: Duration
    /// Whether a locked keyring may be unlocked with its dialog (then the call runs again).
    var unlock: SecureDictionary.Options.UnlockPolicy
    var limits: PropertyListLimits
    var logger: Logger
}

/// Why a mutation failed: the keyring side, or the caller's own closure.
enum MutationFailure<BodyError: Error>: Error {
    case store(SecureDictionaryError)
    case body(BodyError)

    /// Runs keyring-side work, reporting its error as `.store`.
    static func store<T>(_ work: () throws(SecureDictionaryError) -> T) throws(MutationFailure) -> T {
        do { return try work() } catch { throw .store(error) }
    }
}
