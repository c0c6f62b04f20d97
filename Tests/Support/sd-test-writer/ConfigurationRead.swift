import Configuration
import Dispatch
import Foundation
import SecureDictionary
import SecureDictionaryConfiguration
import Synchronization

/// `sd-test-writer config-read APP NAME KEY`: the process a core-dump scan of the
/// configuration provider looks at. It opens the dictionary NAME of APP, reads the one
/// configuration key KEY (components joined by ".") through `SecureDictionaryProvider` as a
/// server would (`value`, `fetchValue`, and the first element of `watchValue`), keeps what it
/// read (the caller's copy, the scan's positive control), prints "ready" and waits for a
/// line. Any other entry of the dictionary found in its core is a copy the provider made
/// and left unwiped.
enum ConfigurationRead {
    static func run(app: String, name: String, key: String, options: SecureDictionary.Options) throws {
        let provider = SecureDictionaryProvider(try SecureDictionary(name: name, applicationID: app, options: options))
        let configKey = AbsoluteConfigKey(key.split(separator: ".").map(String.init))
        let kept = Mutex<[LookupResult]>([])
        let read = try? provider.value(forKey: configKey, type: .string)
        let done = DispatchSemaphore(value: 0)
        Task.detached {  // not on the main thread, which waits below
            defer { done.signal() }
            let fetched = try? await provider.fetchValue(forKey: configKey, type: .string)
            let watched = try? await provider.watchValue(forKey: configKey, type: .string) { updates in
                var iterator = updates.makeAsyncIterator()
                return try await iterator.next()?.get()
            }
            kept.withLock { $0 = [read, fetched, watched].compactMap { $0 } }
        }
        done.wait()
        let found = kept.withLock { $0.filter { $0.value != nil }.count }
        print("ready \(found)")
        fflush(nil)
        _ = readLine()
        withExtendedLifetime(provider) {}
        kept.withLock { withExtendedLifetime($0) {} }  // what it read stays until the core was taken
    }
}
