import Testing

@testable import SecureDictionary

/// ``InfoPlistXML``: the identifier's character references, decoded.
@Suite struct InfoPlistXMLTests {
    @Test func predefinedAndNumericReferencesAreDecodedAndOthersGiveNil() {
        func identifier(_ string: String) -> String? {
            InfoPlistXML.bundleIdentifier(
                in: Array("<plist><dict><key>CFBundleIdentifier</key><string>\(string)</string></dict></plist>".utf8))
        }
        #expect(identifier("a&amp;b&lt;c&gt;d&quot;e&apos;f&#65;&#x42;") == "a&b<c>d\"e'fAB")
        #expect(identifier("a&nbsp;b") == nil)
        #expect(identifier("a&amp b") == nil)
    }
}
