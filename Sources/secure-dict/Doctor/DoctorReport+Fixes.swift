import FoundationEssentials
import SecureDictionary

/// The one fix for each problem `secure-dict doctor` can find with the keyring.
extension DoctorReport {
    static func fixForUnreachableService(_ error: SecureDictionaryError, _ environment: DoctorEnvironment) -> String? {
        switch error {
        case .sandboxed(let advice):
            return advice
        case .serviceUnavailable:
            return environment.noKeyringFix
        case .sessionRejected:
            return "try again; if it keeps failing, update the keyring provider"
        case .timedOut:
            return "the provider hangs: restart it (e.g. gnome-keyring-daemon --replace), or allow more time with --timeout"
        default:
            return nil
        }
    }

    /// The fix for a round trip that failed with `error`. The scratch dictionary is the
    /// doctor's own: one it cannot read (another program wrote it) or that exists twice is
    /// removed with one command, after which the next run writes a new one.
    static func roundTripFix(_ error: SecureDictionaryError, environment: DoctorEnvironment) -> String? {
        let remove =
            "secure-dict delete --app \(scratchApplicationID) --name \(scratchName) --force, then run 'secure-dict doctor' again"
        switch error {
        case .corrupt, .unsupportedFormatVersion, .tooLarge:
            return "it holds no dictionary SecureDictionary can read (another program wrote it); remove it with: \(remove)"
        case .ambiguous:
            return "remove every copy with: \(remove)"
        default:
            return fixForUnreachableService(error, environment)
        }
    }

    /// `provider`: the process that owns the Secret Service's name, when `/proc` tells it.
    static func unlockFix(providerName: String?, environment: DoctorEnvironment, provider: ProviderProcess? = nil) -> String {
        if let fix = ProviderTraits.named(providerName).tool.unlockFix { return fix }
        // A keyring that keeps its files elsewhere than this shell would (a `keyring run`
        // session joined from another shell) is unlocked with its own folders, never the
        // home folder's: a bare --replace would start a keyring on other files.
        let folders = provider?.folders ?? KeyringDaemonFolders(startedFrom: environment.variables)
        let elsewhere = !folders.differences(from: environment.variables).isEmpty
        if environment.hasDesktop && !elsewhere {
            return "unlock the keyring in your keyring manager (GNOME Passwords and Keys), or sign out and in"
        }
        let which = folders.sessionPasswordFile == nil ? "gnome-keyring" : "the 'secure-dict keyring run' session's keyring"
        return "unlock \(which) from this shell: \(folders.unlockCommand(from: environment.variables))"
    }
}
