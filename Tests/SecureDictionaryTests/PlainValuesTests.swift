import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension SecureDictionary.Keys {
    // The short spelling compiles inside `extension SecureDictionary.Keys`.
    fileprivate static let attempts = Key<Int>("attempts", default: 3)
    fileprivate static let nickname = Key<String?>("nickname")
}

private struct Member: Codable, PropertyListConvertible, Equatable {
    var name: String
    var joined: Date
}

/// Plain Swift values, typed keys like Defaults, errors a newcomer can
/// print and match, an instance delete, and property lists other tools write.
@Suite struct PlainValuesTests {
    let store = InMemoryKeyringStore()
    let failures = Failures()

    func open(_ name: String = "plain") throws -> SecureDictionary {
        let failures = failures
        let options = SecureDictionary.Options(store: store, failureHandler: { failures.append($0) })
        return try SecureDictionary(name: name, applicationID: "test.plain", options: options)
    }

    // MARK: Finding 2

    @Test func variablesOfEveryCommonTypeAreAccepted() throws {
        let settings = try open()
        let token = "t-123"
        let id = UUID()
        let url = URL(string: "https://example.com/a?b=c")!
        let big = UInt64.max
        let profile = Member(name: "Ada", joined: Date(timeIntervalSinceReferenceDate: 1.5))
        try settings.setValue(token, forKey: "token")
        try settings.setValue(Int64.min, forKey: "int64")
        try settings.setValue(big, forKey: "uint64")
        try settings.setValue(Int32(-7), forKey: "int32")
        try settings.setValue(Float(0.5), forKey: "float")
        try settings.setValue(id, forKey: "uuid")
        try settings.setValue(url, forKey: "url")
        try settings.setValue(profile, forKey: "profile")
        try settings.setValue([1, 2, 3], forKey: "array")
        try settings.setValue(["a": true], forKey: "dictionary")

        let fresh = try open()  // what a fresh load returns equals what was written
        #expect(try fresh.value(forKey: "token", as: String.self) == token)
        #expect(try fresh.value(forKey: "int64", as: Int64.self) == Int64.min)
        #expect(try fresh.value(forKey: "uint64", as: UInt64.self) == big)
        #expect(try fresh.value(forKey: "int32", as: Int32.self) == -7)
        // Integers of every width are stored as integers, not through their `Codable` form.
        #expect(fresh["int32"] == .integer(-7) && fresh["uint64"] == .unsignedInteger(.max))
        #expect(try fresh.value(forKey: "float", as: Float.self) == 0.5)
        #expect(try fresh.value(forKey: "uuid", as: UUID.self) == id)
        #expect(try fresh.value(forKey: "url", as: URL.self) == url)
        #expect(try fresh.value(forKey: "profile", as: Member.self) == profile)
        #expect(try fresh.value(forKey: "array", as: [Int].self) == [1, 2, 3])
        #expect(try fresh.value(forKey: "dictionary", as: [String: Bool].self) == ["a": true])
        #expect(try fresh.value(forKey: "missing", as: String.self) == nil)
        #expect(fresh["uuid"] == .string(id.uuidString))  // other tools see text
    }

    @Test func anOptionalVariableRemovesWhenNil() throws {
        let settings = try open()
        var nickname: String? = "ada"
        try settings.setValue(nickname, forKey: "nickname")
        #expect(settings["nickname"] == "ada")
        nickname = nil
        try settings.setValue(nickname, forKey: "nickname")
        #expect(settings["nickname"] == nil)
    }

    @Test func theGenericSubscriptReadsAndWritesPlainValues() throws {
        let settings = try open()
        let token = "t-456"
        settings["token"] = token
        let read: String? = settings["token"]
        #expect(read == token)
        let wrongType: Int? = settings["token"]
        #expect(wrongType == nil)
        #expect(failures.all == [.typeMismatch(expected: "Int", found: "string")])  // reported, not swallowed
    }

    @Test func typedReadsThrowOnAnotherType() throws {
        let settings = try open()
        try settings.setValue("text", forKey: "k")
        #expect(throws: SecureDictionaryError.typeMismatch(expected: "Int", found: "string")) {
            try settings.value(forKey: "k", as: Int.self)
        }
        #expect(throws: SecureDictionaryError.typeMismatch(expected: "UInt8", found: "integer")) {
            try settings.setValue(300, forKey: "n")
            return try settings.value(forKey: "n", as: UInt8.self)
        }
    }

    @Test func plainValuesInsideUpdate() throws {
        let settings = try open()
        let access = "a-1"
        let expiry = Date(timeIntervalSinceReferenceDate: 10)
        try settings.update { entries in
            entries["access"] = access  // a String variable, as the issue asked
            entries["expires"] = expiry
            entries[.attempts] = entries[.attempts] + 1
            try entries.set(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"), forKey: "id")
            entries["literal"] = "still a Value"
        }
        #expect(try settings.value(forKey: "access", as: String.self) == access)
        #expect(try settings.value(forKey: "expires", as: Date.self) == expiry)
        #expect(settings[.attempts] == 4)
        #expect(settings["id"] == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
        try settings.update { entries in
            let read: String? = entries["access"]
            #expect(read == access)
            entries["access"] = nil
        }
        #expect(settings["access"] == nil)
    }

    // MARK: Finding 3

    @Test func theTypedSubscriptIsSettable() throws {
        let settings = try open()
        #expect(settings[.attempts] == 3)
        settings[.attempts] = 5
        settings[.nickname] = "ada"
        #expect(try open()[.attempts] == 5)
        settings[.nickname] = nil
        #expect(try open()[.nickname] == nil)
    }

    @Test func aFailedTypedSubscriptWriteIsReported() throws {
        let settings = try open()
        store.setLocked(true)
        settings[.attempts] = 9
        store.setLocked(false)
        #expect(failures.all == [.locked])
        #expect(settings[.attempts] == 3)  // the cache followed the store
    }

    // MARK: Finding 4

    @Test func errorsPrintTheirMessage() {
        let error: any Error = SecureDictionaryError.locked
        #expect(error.localizedDescription == SecureDictionaryError.locked.description)
        #expect(!error.localizedDescription.contains("could not be completed"))
        #expect(SecureDictionaryError.locked.description.contains("is locked"))  // the fix: ErrorMessageTests
    }

    @Test func catchDotLockedWorksAfterUpdate() throws {
        let settings = try open()
        store.setLocked(true)
        var caught = false
        do {
            try settings.update { entries in entries["k"] = 1 }
        } catch .locked {
            caught = true
        } catch {
            Issue.record("unexpected \(error)")
        }
        #expect(caught)
    }

    // MARK: Finding 5

    @Test func anInstanceDeletesItsOwnItem() throws {
        let settings = try open("to-delete")
        try settings.setValue(1, forKey: "k")
        #expect(try settings.delete())
        #expect(store.storedBytes(of: settings.item) == nil)
        #expect(settings.isEmpty)
        #expect(try !settings.delete())  // nothing left: said so
    }

    // MARK: Finding 6

    /// `plistlib.dumps({'n': 2**64-1, 'm': 2**63}, fmt=plistlib.FMT_BINARY)` (Python 3.11).
    static let pythonUnsignedIntegers = hex(
        """
        62706c6973743030d201020304516d516e140000000000000000800000000000000014000000000000\
        0000ffffffffffffffff080d0f11220000000000000101000000000000000500000000000000000000\
        000000000033
        """)

    @Test func integersAboveInt64MaxFromPythonOpen() throws {
        let entries = try BinaryPropertyList.decode(Self.pythonUnsignedIntegers, limits: .default)
        #expect(entries == ["n": .unsignedInteger(.max), "m": .unsignedInteger(1 << 63)])
        #expect(entries["n"]?.unsignedIntegerValue == .max)
        // And they are written back the same way, so other tools read them back too.
        let again = try BinaryPropertyList.encode(entries, limits: .default)
        #expect(try BinaryPropertyList.decode(again, limits: .default) == entries)
    }

    @Test func aNonCanonicalUnsignedIntegerIsRefused() {
        #expect(throws: SecureDictionaryError.self) {
            try BinaryPropertyList.encode(["n": .unsignedInteger(5)], limits: .default)
        }
    }

    /// `plistlib.dumps({'café': 1, 'cafe\u0301': 2}, ...)`: two keys Swift holds equal.
    static let pythonCanonicallyEqualKeys = hex(
        """
        62706c6973743030d2010203046400630061006600e9650063006100660065030110011002080d16\
        21230000000000000101000000000000000500000000000000000000000000000025
        """)

    /// Keys match by their Unicode scalars, as Python, the Secret Service and the
    /// stored plist tell them apart, so the dictionary Python wrote opens with both keys, each
    /// read by its own scalars, and a write keeps both. (Before, Swift's canonical equivalence
    /// made them one key, and the item did not open.)
    @Test func canonicallyEqualKeysFromPythonAreTwoKeys() throws {
        let store = InMemoryKeyringStore()
        let item = try KeyringItem(dictionaryName: "cafe", applicationID: "test.keys.\(UUID().uuidString)")
        store.plant(Self.pythonCanonicallyEqualKeys, for: item)
        let settings = try SecureDictionary(name: "cafe", applicationID: item.applicationID, options: .init(store: store))
        #expect(settings.count == 2)
        #expect(settings["caf\u{E9}"] == .integer(1))
        #expect(settings["cafe\u{301}"] == .integer(2))
        #expect(Set(settings.keys.map { Array($0.unicodeScalars) }).count == 2)
        #expect(settings.snapshot.count == 1)  // a Swift dictionary holds one of them
        try settings.setValue(3, forKey: "other")
        let stored = try #require(store.storedBytes(of: item))
        let written = try stored.withUnsafeBytes { try Generation(copying: $0, limits: .default) }
        #expect(written.count == 3)
        #expect(written.value(forKey: "cafe\u{301}") == .integer(2))
    }

    @Test func keysWithTheSameScalarsTwiceAreAnErrorNamingTheirPositions() {
        // {"k": 1, "k": 2}: the same key twice (two string objects).
        let blob = HandMadeBlob.make([
            [0xD2, 0x01, 0x02, 0x03, 0x04], [0x51, 0x6B], [0x51, 0x6B], [0x10, 0x01], [0x10, 0x02],
        ])
        #expect {
            try BinaryPropertyList.decode(blob, limits: .default)
        } throws: { error in
            guard case SecureDictionaryError.corrupt(let reason) = error else { return false }
            return reason.contains("entries 1 and 2") && !reason.contains("\"k\"")  // positions, never the text
        }
    }

    static func hex(_ text: String) -> [UInt8] {
        let digits = Array(text.filter(\.isHexDigit))
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }
}

@Suite struct FoundationObjectTests {
    @Test func eachCaseBecomesItsOwnFoundationType() throws {
        let date = Date(timeIntervalSinceReferenceDate: 1.5)
        let value = PropertyListValue.dictionary([
            "s": "text", "i": .integer(-3), "u": .unsignedInteger(UInt64.max), "r": .real(0.5), "b": .bool(true),
            "d": .date(date), "x": .data(Data([1, 2])), "a": .array(["x", .integer(1)]), "n": .dictionary(["k": "v"]),
        ])
        let object = try #require(value.foundationObject as? [String: Any])
        #expect(object["s"] as? String == "text")
        #expect(object["i"] as? Int == -3)
        #expect(object["u"] as? UInt64 == UInt64.max)
        #expect(object["r"] as? Double == 0.5)
        #expect(object["b"] as? Bool == true)
        #expect(object["d"] as? Date == date)
        #expect(object["x"] as? Data == Data([1, 2]))
        let array = try #require(object["a"] as? [Any])
        #expect(array.count == 2 && array[0] as? String == "x" && array[1] as? Int == 1)
        #expect((object["n"] as? [String: Any])?["k"] as? String == "v")
        // What Foundation writes from it reads back to the same value.
        let blob = try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0)
        #expect(try BinaryPropertyListCoding.decode(blob) == value.dictionaryValue)
    }
}
