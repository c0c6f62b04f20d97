import Foundation
import SecureDictionary
import SecureDictionaryTestSupport
import Testing

extension SecureDictionary.Keys {
    static let apiToken = SecureDictionary.Key<String?>("apiToken")
    static let retries = SecureDictionary.Key<Int>("retries", default: 3)
    static let ratio = SecureDictionary.Key<Double>("ratio", default: 0.5)
    static let tags = SecureDictionary.Key<[String]>("tags", default: [])
    static let profile = SecureDictionary.Key<Profile?>("profile")
    static let session = SecureDictionary.Key<Session>("session", default: .signedOut)
}

struct Profile: Codable, Equatable, PropertyListConvertible {
    var name: String
    var joined: Date
    var avatar: Data
    var nickname: String?
    var scores: [Double]
    var limits: [String: Int]
}

enum Session: Codable, Equatable, PropertyListConvertible {
    case signedOut
    case signedIn(user: String, until: Date)
}

@Suite struct TypedKeyTests {
    let store = InMemoryKeyringStore()

    func open() throws -> SecureDictionary {
        try SecureDictionary(name: "typed", applicationID: "test.typed.\(UUID().uuidString)", options: .init(store: store))
    }

    @Test func defaultsUntilSetAndNilRemoves() throws {
        let settings = try open()
        #expect(settings[.retries] == 3)
        #expect(settings[.apiToken] == nil)
        try settings.set(5, for: .retries)
        try settings.set("token", for: .apiToken)
        #expect(settings[.retries] == 5)
        #expect(settings["retries"] == .integer(5))  // stored as a plain integer
        #expect(settings[.apiToken] == "token")
        try settings.set(nil, for: .apiToken)
        #expect(settings["apiToken"] == nil)
        try settings.remove(.retries)
        #expect(settings[.retries] == 3)
    }

    @Test func typedAccessInsideUpdate() throws {
        let settings = try open()
        try settings.update { entries in
            #expect(entries[.retries] == 3)
            try entries.set(4, for: .retries)
            try entries.set("t", for: .apiToken)
        }
        #expect(settings[.retries] == 4)
        try settings.update { entries in try entries.set(nil, for: .apiToken) }
        #expect(settings["apiToken"] == nil)
    }

    @Test func wrongStoredTypeThrowsOrReadsAsTheDefault() throws {
        let reported = Failures()
        let settings = try SecureDictionary(
            name: "typed", applicationID: "test.typed.\(UUID().uuidString)",
            options: .init(store: store, failureHandler: { reported.append($0) }))
        try settings.setValue("three", forKey: "retries")
        try settings.setValue(1, forKey: "ratio")  // an integer is not a real
        #expect(settings[.retries] == 3)
        #expect(settings[.ratio] == 0.5)
        #expect(throws: SecureDictionaryError.typeMismatch(expected: "Int", found: "string")) {
            try settings.value(for: .retries)
        }
        #expect(reported.all.count == 2)
    }

    @Test func codableValuesRoundTripAsStructure() throws {
        let settings = try open()
        let profile = Profile(
            name: "Ada", joined: Date(timeIntervalSinceReferenceDate: 12_345.678_9), avatar: Data([0, 1, 2]),
            nickname: nil, scores: [1.5, -0.0], limits: ["daily": 10])
        try settings.set(profile, for: .profile)
        try settings.set(.signedIn(user: "ada", until: Date(timeIntervalSinceReferenceDate: 1)), for: .session)
        try settings.set(["a", "b"], for: .tags)

        // Read back from the stored bytes, as another process would.
        let written = try BinaryPropertyListCoding.decode(Data(try #require(store.storedBytes(of: settings.item))))
        #expect(try Profile(propertyListValue: try #require(written["profile"])) == profile)
        #expect(try settings.value(for: .profile) == profile)
        #expect(try settings.value(for: .session) == .signedIn(user: "ada", until: Date(timeIntervalSinceReferenceDate: 1)))
        #expect(settings[.tags] == ["a", "b"])

        // Other plist readers see fields, not an opaque string.
        let stored = try #require(settings["profile"]?.dictionaryValue)
        #expect(stored["name"] == "Ada")
        #expect(stored["joined"] == .date(profile.joined))
        #expect(stored["avatar"] == .data(Data([0, 1, 2])))
        #expect(stored["nickname"] == nil)
        #expect(stored["limits"] == ["daily": 10])
    }

    @Test func codableMismatchIsTyped() throws {
        let settings = try open()
        try settings.setValue(["name": 1], forKey: "profile")
        #expect { try settings.value(for: .profile) } throws: { error in
            if case SecureDictionaryError.typeMismatch(let expected, _) = error { return expected.contains("Profile") }
            return false
        }
        #expect(settings[.profile] == nil)
    }
}

@Suite struct SecureStoredTests {
    @Test func wrapperReadsWritesAndReportsFailures() throws {
        let store = InMemoryKeyringStore()
        let reported = Failures()
        let settings = try SecureDictionary(
            name: "wrapped", applicationID: "test.wrapper.\(UUID().uuidString)",
            options: .init(store: store, failureHandler: { reported.append($0) }))
        @SecureStored(.retries, in: settings) var retries
        #expect(retries == 3)
        retries += 1
        #expect(settings["retries"] == .integer(4))
        store.failNextCalls(with: .locked)
        retries = 10
        #expect(retries == 4)  // the cache followed the store
        #expect(reported.all == [.locked])
        store.failNextCalls(with: .locked)
        #expect(throws: SecureDictionaryError.locked) { try $retries.set(11) }
        try $retries.set(12)
        #expect(try $retries.get() == 12)
    }
}
