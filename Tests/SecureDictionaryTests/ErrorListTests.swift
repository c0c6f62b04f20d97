import Foundation
import SecureDictionaryTestSupport
import Testing

/// The list of errors users read is the one list, and it names every case of the
/// enum: a case added without a line there fails here. (The README, the DocC article and the
/// enum had drifted apart: each lacked cases the others had.) Each product lists
/// its own errors in its own catalog.
@Suite struct ErrorListTests {
    /// A product's error enum and the article that lists its cases.
    struct ErrorList: CustomStringConvertible {
        let enumName: String
        let source: String
        let article: String
        var description: String { enumName }
    }

    static let lists = [
        ErrorList(
            enumName: "SecureDictionaryError", source: "Sources/SecureDictionary/SecureDictionaryError.swift",
            article: "Sources/SecureDictionary/SecureDictionary.docc/ErrorHandling.md"),
        ErrorList(
            enumName: "FileStoreError", source: "Sources/SecureDictionaryFileStore/FileStoreError.swift",
            article: "Sources/SecureDictionaryFileStore/SecureDictionaryFileStore.docc/FileStoreErrors.md"),
        ErrorList(
            enumName: "AdoptionError", source: "Sources/SecureDictionaryAdoption/AdoptionError.swift",
            article: "Sources/SecureDictionaryAdoption/SecureDictionaryAdoption.docc/AdoptionErrors.md"),
    ]

    static func text(_ path: String) throws -> String {
        try String(contentsOf: PrivateKeyring.packageRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// The names of the cases `public enum <name>` declares in `source`.
    static func cases(of list: ErrorList) throws -> [String] {
        let body = try text(list.source).components(separatedBy: "public enum \(list.enumName)")[1]
            .components(separatedBy: "\n}\n")[0]
        return body.split(separator: "\n").compactMap { line in
            let text = line.trimmingCharacters(in: .whitespaces)
            guard text.hasPrefix("case "), text.dropFirst(5).first?.isLetter == true else { return nil }  // not a `switch`'s
            return String(text.dropFirst(5).prefix { $0.isLetter || $0.isNumber })
        }
    }

    @Test(arguments: lists) func theArticleNamesEveryCaseAndNoOther(_ list: ErrorList) throws {
        let article = try Self.text(list.article)
        let cases = try Self.cases(of: list)
        #expect(!cases.isEmpty, "the enum's cases were not found")
        for name in cases {
            #expect(article.contains("``\(list.enumName)/\(name)"), "\(list.article) lacks \(name)")
        }
        let named = Set(
            article.components(separatedBy: "``\(list.enumName)/").dropFirst().map {
                String($0.prefix { $0.isLetter || $0.isNumber })
            })
        #expect(named.subtracting(cases).isEmpty, "\(list.article) names cases the enum lacks: \(named.subtracting(cases))")
    }

    /// The core's errors have a written `==` (a store's error is an existential): every case
    /// of the messages' list equals itself and no other, so a case added to the enum but not
    /// to `==` fails here (ErrorMessageTests' list holds one of every case, checked below).
    @Test func everyErrorEqualsItselfAndNoOther() {
        let errors = ErrorMessageTests.errors
        for (index, error) in errors.enumerated() {
            for (otherIndex, other) in errors.enumerated() {
                let same = index == otherIndex || String(describing: error) == String(describing: other)
                #expect((error == other) == same, "\(caseName(error)) == \(caseName(other))")
            }
        }
    }

    @Test func theMessagesListHasOneOfEveryCase() throws {
        let core = try Self.cases(of: Self.lists[0]).filter { $0 != "store" }
        let stores = try Self.lists.dropFirst().flatMap { try Self.cases(of: $0) }
        let listed = Set(ErrorMessageTests.errors.map { caseName($0) })
        #expect(Set(core + stores).subtracting(listed).isEmpty, "not in ErrorMessageTests.errors")
    }
}
