// feature-dictionaries: one app, one named dictionary per feature. Device-wide preferences
// live in "preferences"; each user's sync secret lives in a dictionary of their own,
// "account.<user>", so signing a user out or removing them touches nothing else.
//
//   scripts/run-example feature-dictionaries           # a short session: alice and bob
//   scripts/run-example feature-dictionaries --reset   # removes every dictionary it made
import Foundation
import SecureDictionary

extension SecureDictionary.Keys {
    static let lastUser = SecureDictionary.Key<String?>("lastUser")  // "preferences"
    static let syncSecret = SecureDictionary.Key<String?>("syncSecret")  // "account.<user>"
}

let applicationID = "io.github.securedictionary.example"

/// Opens (loads) a user's own dictionary.
func account(_ user: String) throws -> SecureDictionary {
    try SecureDictionary(name: "account.\(user)", applicationID: applicationID)
}

/// Signs `user` in: their secret from the keyring, or a new one on their first sign-in.
func signIn(_ user: String, preferences: SecureDictionary) throws -> SecureDictionary {
    try preferences.set(user, for: .lastUser)
    let secrets = try account(user)
    if let secret = secrets[.syncSecret] {
        print("\(user) signs in again: found their secret (\(secret.count) characters, not shown).")
    } else {
        let secret = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        try secrets.set(secret, for: .syncSecret)
        print("\(user) signs in for the first time: stored a new secret.")
    }
    return secrets
}

do {
    if CommandLine.arguments.dropFirst().first == "--reset" {
        for name in try SecureDictionary.names(applicationID: applicationID)
        where name == "preferences" || name.hasPrefix("account.") {
            _ = try SecureDictionary.delete(name: name, applicationID: applicationID)  // listed just now
        }
        print("Removed the example's dictionaries.")
        exit(0)
    }
    let preferences = try SecureDictionary(name: "preferences", applicationID: applicationID)
    print("Last user on this device: \(preferences[.lastUser] ?? "nobody yet").")

    // alice signs out: releasing her dictionary (the last reference to it) drops this
    // process's copy of her secrets at once and wipes the bytes the library owns. Her
    // dictionary stays in the keyring for her next sign-in.
    var alice: SecureDictionary? = try signIn("alice", preferences: preferences)
    print("alice is signed in: \(alice!)")  // the description shows the item and a count, never values
    alice = nil
    print("alice signs out: her secrets are gone from memory.")

    // bob signs in, then removes his account: deleting his dictionary removes all of his
    // secrets from the keyring in one call, and leaves alice's and the preferences alone.
    let bob = try signIn("bob", preferences: preferences)
    try bob.delete()
    print("bob removes his account: his dictionary is deleted.")

    let names = try SecureDictionary.names(applicationID: applicationID).filter {
        $0 == "preferences" || $0.hasPrefix("account.")
    }
    print("Dictionaries now: \(names.sorted().joined(separator: ", ")). Run me again: alice is remembered.")
} catch {
    // SecureDictionaryError messages never contain a key or a value: safe to show.
    FileHandle.standardError.write(Data("feature-dictionaries: \(error)\n".utf8))
    exit(2)
}
