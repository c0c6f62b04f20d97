import Foundation
import SecureDictionaryTestSupport
import Testing

/// Issue 32: the list of errors users read (the DocC article ErrorHandling) is the one list,
/// and it names every case of the enum: a case added without a line there fails here. (The
/// README, the DocC article and the enum had drifted apart: each lacked cases the others had.)
@Suite struct ErrorListTests {
    static func cases() throws -> [String] {
        let source = try String(
            contentsOf: PrivateKeyring.packageRoot.appendingPathComponent("Sources/SecureDictionary/SecureDictionaryError.swift"),
            encoding: .utf8)
        let body = source.components(separatedBy: "public enum SecureDictionaryError")[1].components(separatedBy: "\n}\n")[0]
        return body.split(separator: "\n").compactMap { line in
            let text = line.trimmingCharacters(in: .whitespaces)
            guard text.hasPrefix("case ") else { return nil }
            return String(text.dropFirst(5).prefix { $0.isLetter || $0.isNumber })
        }
    }

    @Test func theArticleNamesEveryCaseAndNoOther() throws {
        let article = try String(
            contentsOf: PrivateKeyring.packageRoot.appendingPathComponent(
                "Sources/SecureDictionary/SecureDictionary.docc/ErrorHandling.md"),
            encoding: .utf8)
        let cases = try Self.cases()
        #expect(cases.count >= 30, "the enum's cases were not found: \(cases)")
        for name in cases {
            #expect(article.contains("``SecureDictionaryError/\(name)"), "ErrorHandling.md lacks \(name)")
        }
        let named = Set(
            article.components(separatedBy: "``SecureDictionaryError/").dropFirst().map {
                String($0.prefix { $0.isLetter || $0.isNumber })
            })
        #expect(named.subtracting(cases).isEmpty, "ErrorHandling.md names cases the enum lacks: \(named.subtracting(cases))")
    }
}
