import CLibSecret
import CSecretShim
import Foundation
import Testing

extension KeyringIntegration {
    /// "Nothing hangs": no unlock prompt is ever shown. The service subclass in CSecretShim
    /// makes any prompt libsecret would show fail at once with SECRET_ERROR_IS_LOCKED.
    @Suite struct NoPrompt {
        @Test func unlockingALockedCollectionFailsAtOnceInsteadOfPrompting() throws {
            try KeyringHarness.daemon("lock")
            defer { try? KeyringHarness.daemon("unlock") }

            var error: UnsafeMutablePointer<GError>?
            let service = try #require(sd_service_open(g_get_monotonic_time() + 10_000_000, 1, nil, &error))
            defer { g_object_unref(service) }
            let alias = try #require(secret_service_read_alias_dbus_path_sync(service, "default", nil, &error))
            defer { g_free(alias) }

            // Service.Unlock answers with a prompt; a normal SecretService would show it.
            var unlocked: UnsafeMutablePointer<UnsafeMutablePointer<gchar>?>?
            let start = ContinuousClock.now
            let count = withUnsafeMutablePointer(to: &unlocked) { unlockedPointer in
                [UnsafePointer<gchar>(alias), nil].withUnsafeBufferPointer { paths in
                    let mutablePaths = UnsafeMutablePointer(mutating: paths.baseAddress!)
                    return secret_service_unlock_dbus_paths_sync(service, mutablePaths, nil, unlockedPointer, &error)
                }
            }
            let elapsed = ContinuousClock.now - start
            g_strfreev(unlocked)
            #expect(count == -1)
            let failure = try #require(error)
            #expect(failure.pointee.domain == secret_error_get_quark())
            #expect(failure.pointee.code == Int32(SECRET_ERROR_IS_LOCKED.rawValue))
            g_error_free(failure)
            #expect(elapsed < .seconds(5), "took \(elapsed)")  // not a perf goal: a prompt is waited for 25 s or more
        }
    }
}
