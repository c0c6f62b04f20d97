import SecureDictionary

/// The case name of an error alone, e.g. `timedOut`: never its payload, which may name a
/// path or echo a value. What test processes print and what reports show.
///
/// ```swift
/// do { try dictionary.setValue("x", forKey: "k") } catch { print("error \(caseName(error))") }
/// ```
public func caseName(_ error: any Error) -> String {
    guard let error = error as? SecureDictionaryError else { return "untyped(\(type(of: error)))" }
    switch error {
    case .serviceUnavailable: return "serviceUnavailable"
    case .noSuchCollection: return "noSuchCollection"
    case .sandboxed: return "sandboxed"
    case .locked: return "locked"
    case .timedOut: return "timedOut"
    case .connectionLost: return "connectionLost"
    case .cancelled: return "cancelled"
    case .corrupt: return "corrupt"
    case .unsupportedFormatVersion: return "unsupportedFormatVersion"
    case .tooLarge: return "tooLarge"
    case .invalidValue: return "invalidValue"
    case .invalidName: return "invalidName"
    case .typeMismatch: return "typeMismatch"
    case .ambiguous: return "ambiguous"
    case .lockHeld: return "lockHeld"
    case .confirmationRequired: return "confirmationRequired"
    case .confirmationDenied: return "confirmationDenied"
    case .unlockDismissed: return "unlockDismissed"
    case .sessionRejected: return "sessionRejected"
    case .writeNotVerified: return "writeNotVerified"
    case .portalUnavailable: return "portalUnavailable"
    case .fileUnavailable: return "fileUnavailable"
    case .alreadyExists: return "alreadyExists"
    case .sourceChanged: return "sourceChanged"
    case .sameStore: return "sameStore"
    case .unsafePath: return "unsafePath"
    case .wrongPassphrase: return "wrongPassphrase"
    case .wrongKey: return "wrongKey"
    case .credentialUnavailable: return "credentialUnavailable"
    case .passphraseUnavailable: return "passphraseUnavailable"
    case .rolledBack: return "rolledBack"
    case .noStoreAvailable: return "noStoreAvailable"
    case .storeHoldsNoItems: return "storeHoldsNoItems"
    case .keyring: return "keyring"
    }
}
