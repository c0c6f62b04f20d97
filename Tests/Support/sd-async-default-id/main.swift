// An app's program as users write it: async top-level code, no `import Foundation`, and the
// default application ID (the main bundle's identifier, else the executable's name), worked
// out for the first time on a thread of the cooperative pool while the main thread is parked
// in `dispatch_main`. DefaultApplicationIDTests runs it as a process of its own and expects
// it to end, with both lines printed.
import SecureDictionary

func loadToken() async throws -> String? {
    let tokens = try SecureDictionary(name: "tokens")  // the default application ID
    return tokens["apiToken"]
}

let token = try await loadToken()
print("token present:", token != nil)
print("application ID:", SecureDictionary.defaultApplicationID)
