// token-cache: how an HTTP client keeps an OAuth-style token pair in the keyring.
//
//   scripts/run-example token-cache              # signs in once, then reuses or refreshes
//   scripts/run-example token-cache --expire     # pretends the access token expired
//   scripts/run-example token-cache --sign-out   # removes the tokens
//
// It never prints a token: only lengths and times.
import Foundation
import SecureDictionary

extension SecureDictionary.Keys {
    static let accessToken = SecureDictionary.Key<String?>("accessToken")
    static let refreshToken = SecureDictionary.Key<String?>("refreshToken")
    static let expiresAt = SecureDictionary.Key<Date>("expiresAt", default: .distantPast)
}

/// Stands in for the authorization server: new random tokens, valid for an hour.
func tokenEndpoint(refreshToken: String?) -> (access: String, refresh: String, expires: Date) {
    func random() -> String { (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }
    return (random(), random(), Date().addingTimeInterval(3600))
}

/// A token that is still good a minute from now.
func isFresh(_ expiry: Date) -> Bool { expiry > Date().addingTimeInterval(60) }

let applicationID = "io.github.securedictionary.example"
let argument = CommandLine.arguments.dropFirst().first

do {
    if argument == "--sign-out" {
        let removed = try SecureDictionary.delete(name: "oauth", applicationID: applicationID)
        print(removed ? "Signed out: the tokens are gone from the keyring." : "Already signed out: no tokens were stored.")
        exit(0)
    }
    let tokens = try SecureDictionary(name: "oauth", applicationID: applicationID)
    if argument == "--expire" { try tokens.set(Date(), for: .expiresAt) }

    // The common case costs no keyring call: the cache was loaded by init.
    if let access = tokens[.accessToken], isFresh(tokens[.expiresAt]) {
        print("Using the cached access token (\(access.count) characters, not shown).")
    } else {
        // Refresh inside one update { }: access token, refresh token and expiry change together
        // or not at all, and the closure runs under a cross-process lock on the current stored
        // entries, so two processes never spend the same (single-use) refresh token. Keep the
        // HTTP call in it short: other writers wait for it, up to Options.timeout.
        let refreshed = try tokens.update { entries -> Bool in
            if entries[.accessToken] != nil, isFresh(entries[.expiresAt]) { return false }  // another process did it
            let old = entries[.refreshToken]
            let pair = tokenEndpoint(refreshToken: old)
            try entries.set(pair.access, for: .accessToken)
            try entries.set(pair.refresh, for: .refreshToken)
            try entries.set(pair.expires, for: .expiresAt)
            return old != nil
        }
        print(refreshed ? "Refreshed the token pair (one keyring write)." : "Signed in: stored a new token pair.")
    }
    let expiry = tokens[.expiresAt].formatted(date: .omitted, time: .shortened)
    print("The access token (\(tokens[.accessToken]?.count ?? 0) characters, not shown) is valid until \(expiry).")
} catch {
    // SecureDictionaryError messages never contain a key or a value: safe to show.
    FileHandle.standardError.write(Data("token-cache: \(error)\n".utf8))
    exit(2)
}
