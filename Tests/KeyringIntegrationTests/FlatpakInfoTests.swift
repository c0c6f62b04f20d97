import SecureDictionaryTestSupport
import Testing

extension KeyringIntegration.Sandboxes {
    /// An empty `/.flatpak-info` (a stray mount point) is no Flatpak: the error is
    /// the plain "no keyring", not advice about a sandbox's permissions.
    @Test func anEmptyFlatpakInfoIsNoSandbox() throws {
        let output = try runInSandbox(flatpakInfo: "")
        #expect(output.text.hasPrefix("error serviceUnavailable"), "\(output.text) \(output.stderr)")
    }
}
