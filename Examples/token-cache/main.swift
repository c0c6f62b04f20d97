// token-cache: how an async HTTP client keeps an OAuth-style token pair in the keyring, and
// refreshes it without two processes ever spending the same single-use refresh token.
//
//   scripts/run-example token-cache              # signs in once, then reuses or refreshes
//   scripts/run-example token-cache --expire     # pretends the access token expired
//   scripts/run-example token-cache --sign-out   # removes the tokens
//
// It never prints a token: only lengths and times.
import Foundation
import SecureDictionary

extension SecureDictionary.Keys {
    static let accessToken = Key<String?>("accessToken")
    static let refreshToken = Key<String?>("refreshToken")
    static let expiresAt = Key<Date>("expiresAt", default: .distantPast)
    /// Set while one process refreshes: the moment its claim lapses (if it died meanwhile).
    static let refreshingUntil = Key<Date?>("refreshingUntil")
}

/// Stands in for the authorization server: a network call that takes a while and hands out
/// new random tokens, valid for an hour. A real server accepts each refresh token once.
func tokenEndpoint(refreshToken: String?) async throws -> (access: String, refresh: String, expires: Date) {
    try await Task.sleep(for: .milliseconds(200))
    func random() -> String { (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }
    return (random(), random(), Date().addingTimeInterval(3600))
}

/// A token that is still good a minute from now.
func isFresh(_ expiry: Date) -> Bool { expiry > Date().addingTimeInterval(60) }

/// Refreshes the pair unless it is fresh. Returns what happened, for the output.
///
/// The recipe: (1) claim the refresh with an optimistic `update(ifUnchanged:)`, which only one
/// process can win for a given refresh token; (2) await the server with no lock held; (3)
/// commit the new pair, again only if nobody changed the refresh token meanwhile.
func refreshIfNeeded(_ tokens: SecureDictionary) async throws -> String {
    try tokens.reload()  // what the keyring holds now: another process may have refreshed
    if tokens[.accessToken] != nil, isFresh(tokens[.expiresAt]) { return "Using the cached access token" }
    let refresh = tokens[.refreshToken]
    let claim = tokens[.refreshingUntil]
    if let claim, claim > Date() { return "Another process is refreshing; try again in a moment" }

    let claimed = try await tokens.async.update(ifUnchanged: [
        "refreshToken": refresh.map { .string($0) }, "refreshingUntil": claim.map { .date($0) },
    ]) { entries in
        try entries.set(Date().addingTimeInterval(30), for: .refreshingUntil)
    }
    guard claimed else { return "Another process refreshed or claimed the token first" }

    let pair = try await tokenEndpoint(refreshToken: refresh)  // no keyring lock held here

    let committed = try await tokens.async.update(ifUnchanged: ["refreshToken": refresh.map { .string($0) }]) { entries in
        try entries.set(pair.access, for: .accessToken)
        try entries.set(pair.refresh, for: .refreshToken)
        try entries.set(pair.expires, for: .expiresAt)
        try entries.set(nil, for: .refreshingUntil)
    }
    guard committed else { return "Another process replaced the tokens meanwhile; kept theirs" }
    return refresh == nil ? "Signed in: stored a new token pair" : "Refreshed the token pair"
}

let applicationID = "io.github.securedictionary.example"
let argument = CommandLine.arguments.dropFirst().first

do {
    if argument == "--sign-out" {
        let removed = try SecureDictionary.delete(name: "oauth", applicationID: applicationID)
        print(removed ? "Signed out: the tokens are gone from the keyring." : "Already signed out: no tokens were stored.")
        exit(0)
    }
    let tokens = try await SecureDictionary.Async.open(name: "oauth", applicationID: applicationID)
    if argument == "--expire" { try await tokens.async.set(Date(), for: .expiresAt) }

    print(try await refreshIfNeeded(tokens) + ".")
    let expiry = tokens[.expiresAt].formatted(date: .omitted, time: .shortened)
    print("The access token (\(tokens[.accessToken]?.count ?? 0) characters, not shown) is valid until \(expiry).")
} catch {
    // SecureDictionaryError messages never contain a key or a value: safe to show.
    FileHandle.standardError.write(Data("token-cache: \(error.localizedDescription)\n".utf8))
    exit(2)
}
