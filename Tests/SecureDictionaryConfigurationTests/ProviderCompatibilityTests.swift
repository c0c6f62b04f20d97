import ConfigurationTesting
import SecureDictionaryConfiguration
import SecureDictionaryTestSupport
import Testing

@Suite struct ProviderCompatibility {
    @Test func passesSwiftConfigurationsProviderCompatTest() async throws {
        let fixture = try ProviderFixture(ProviderCompatEntries.all)
        try await ProviderCompatTest(provider: fixture.provider).runTest()
    }
}
