// wait-for-keyring: what a desktop app does when the keyring is still locked at its start
// (auto-login and fingerprint login leave it locked): it says so, waits until anyone unlocks
// it (the user in the keyring manager, another app, a login) and goes on by itself. With
// --ask it shows the keyring's own unlock dialog instead, which needs a desktop.
//
//   scripts/run-example wait-for-keyring          # lock your keyring first to see the wait
//   scripts/run-example wait-for-keyring --ask    # ask for the password in the keyring's dialog
//
// It stores one number: how many times it ran.
import Foundation
import SecureDictionary

let ask = CommandLine.arguments.contains("--ask")
do {
    let settings: SecureDictionary
    if ask {
        let options = SecureDictionary.Options(unlock: .prompt(timeout: .seconds(120)))
        settings = try await SecureDictionary.Async.open(name: "settings", options: options)
    } else {
        do {
            settings = try SecureDictionary(name: "settings")
        } catch .locked {
            print("Waiting for your keyring to be unlocked… (unlock it in your keyring manager; Ctrl-C to give up)")
            settings = try await SecureDictionary.Async.openWhenUnlocked(name: "settings")
        }
    }
    let runs = (settings["runs"]?.integerValue ?? 0) + 1
    try settings.setValue(runs, forKey: "runs")
    print("The keyring is unlocked: this example has run \(runs) time\(runs == 1 ? "" : "s").")
} catch {
    print("Error: \(error)")
    exit(1)
}
