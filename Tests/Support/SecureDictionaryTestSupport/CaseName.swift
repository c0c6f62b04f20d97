import SecureDictionary

/// The case name of an error alone, e.g. `timedOut` (`wrongPassphrase` for
/// `.store(FileStoreError.wrongPassphrase)`): never its payload, which may name a
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
    case .alreadyExists: return "alreadyExists"
    case .sourceChanged: return "sourceChanged"
    case .sameStore: return "sameStore"
    // A store's own error (FileStoreError, AdoptionError…): its case's name, as for the core's.
    case .store(let error): return (error as? any NamedErrorCase)?.caseName ?? "store(\(type(of: error)))"
    case .keyring: return "keyring"
    }
}

/// "ok" when `body` returns, else the case name of what it threw (`caseName(_:)`): one
/// string for a test to compare, whatever the call returns.
///
/// ```swift
/// #expect(outcome { try dictionary.setValue(1, forKey: "a") } == "portalUnavailable")
/// ```
public func outcome(_ body: () throws -> Any) -> String {
    do {
        _ = try body()
        return "ok"
    } catch {
        return caseName(error)
    }
}
