import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `sd-test-writer hold-refresh APP NAME`: a token refresh of another process that goes on
/// until told, for `StoreContract`. Calls `value(forKey:lockWait:refreshingIf:refresh:)` for
/// "token", always stale; inside the refresh (holding the item's lock) prints "holding PID",
/// waits for a line (or the end) of standard input, sets "token" to "from PID"; then prints
/// "ok TOKEN" or "error CASE".
enum HoldRefresh {
    static func run(app: String, name: String, options: SecureDictionary.Options) {
        do {
            let dictionary = try SecureDictionary(name: name, applicationID: app, options: options)
            let token = try dictionary.value(forKey: "token", lockWait: .seconds(30), refreshingIf: { _ in true }) { entries in
                print("holding \(getpid())")
                fflush(nil)
                _ = readLine()
                entries["token"] = .string("from \(getpid())")
            }
            print("ok \(token?.stringValue ?? "none")")
        } catch {
            print("error \(caseName(error))")
        }
    }
}
