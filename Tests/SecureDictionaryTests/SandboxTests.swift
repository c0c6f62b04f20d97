import Foundation
import Testing

@testable import SecureDictionary

/// Which sandbox this is, and what to tell the user.
@Suite struct SandboxTests {
    @Test func aFlatpakIsNamedFromItsInfoFile() {
        let info =
            "[Application]\nname=org.example.Notes\nruntime=runtime/org.gnome.Platform/x86_64/47\n\n[Instance]\ninstance-id=1\n"
        let sandbox = Sandbox.detect(flatpakInfo: info, environment: [:])
        #expect(sandbox == .flatpak(appID: "org.example.Notes"))
        #expect(sandbox?.advice.contains("--talk-name=org.freedesktop.secrets") == true)
        #expect(sandbox?.advice.contains("org.example.Notes") == true)
    }

    /// Only a file Flatpak really writes (an `[Application]` group with a name) is a
    /// Flatpak. An empty `/.flatpak-info` (a stray mount point) made every process on the
    /// machine believe it was sandboxed.
    @Test func aFlatpakInfoWithoutAnApplicationNameIsNoSandbox() {
        #expect(Sandbox.detect(flatpakInfo: "", environment: [:]) == nil)
        #expect(Sandbox.detect(flatpakInfo: "\n", environment: [:]) == nil)
        #expect(Sandbox.detect(flatpakInfo: "[Instance]\nname=not-the-app\n", environment: [:]) == nil)
        #expect(Sandbox.detect(flatpakInfo: "[Application]\nruntime=x\n", environment: [:]) == nil)
        #expect(Sandbox.detect(flatpakInfo: "[Application]\nname=\n", environment: [:]) == nil)
        #expect(Sandbox.detect(flatpakInfo: "", environment: ["SNAP_NAME": "notes"]) == .snap(name: "notes"))
    }

    @Test func aSnapIsNamedFromItsEnvironment() {
        let sandbox = Sandbox.detect(flatpakInfo: nil, environment: ["SNAP_NAME": "notes"])
        #expect(sandbox == .snap(name: "notes"))
        #expect(sandbox?.advice.contains("password-manager-service") == true)
    }

    @Test func noSandbox() {
        #expect(Sandbox.detect(flatpakInfo: nil, environment: ["HOME": "/root"]) == nil)
    }

    @Test func theErrorSaysWhatToDo() {
        let error = SecureDictionaryError.sandboxed(advice: Sandbox.flatpak(appID: "org.example.Notes").advice)
        #expect(error.localizedDescription.hasPrefix("This sandboxed app cannot reach the keyring: add '--talk-name="))
        #expect(error.localizedDescription.contains("org.example.Notes"))
    }
}
