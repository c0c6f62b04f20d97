import Configuration
import SecureDictionary
import Testing

@testable import SecureDictionaryConfiguration

/// A configuration key names the entry its components joined by "." name, or a stored
/// dictionary continues the name.
@Suite struct KeyMapping {
    func string(_ key: AbsoluteConfigKey, in entries: [String: PropertyListValue]) throws -> String? {
        let value = try ProviderFixture(entries).provider.value(forKey: key, type: .string).value
        guard case .string(let string)? = value?.content else { return nil }
        return string
    }

    @Test func componentsJoinedByADotNameAnEntry() throws {
        let entries: [String: PropertyListValue] = ["database.password": "flat", "password": "top"]
        #expect(try string(["database", "password"], in: entries) == "flat")
        #expect(try string(["password"], in: entries) == "top")
        #expect(try string(["database"], in: entries) == nil)
        let result = try ProviderFixture(entries).provider.value(forKey: ["database", "password"], type: .string)
        #expect(result.encodedKey == "database.password")
    }

    @Test func aStoredDictionaryContinuesTheName() throws {
        let entries: [String: PropertyListValue] = [
            "database": ["password": "nested", "primary": ["host": "deep"], "replica.host": "dotted"]
        ]
        #expect(try string(["database", "password"], in: entries) == "nested")
        #expect(try string(["database", "primary", "host"], in: entries) == "deep")
        #expect(try string(["database", "replica", "host"], in: entries) == "dotted")
        #expect(try string(["database", "user"], in: entries) == nil)
    }

    @Test func theLongestStoredNameWins() throws {
        let entries: [String: PropertyListValue] = [
            "database.password": "flat", "database": ["password": "nested", "user": "nested-user"],
        ]
        #expect(try string(["database", "password"], in: entries) == "flat")
        #expect(try string(["database", "user"], in: entries) == "nested-user")
        // A longer name holding no dictionary does not hide a shorter one that goes on.
        let shadowing: [String: PropertyListValue] = ["a.b": "not a dictionary", "a": ["b": ["c": "found"]]]
        #expect(try string(["a", "b", "c"], in: shadowing) == "found")
    }

    @Test func aValueThatIsNoDictionaryEndsTheName() throws {
        #expect(try string(["database", "password"], in: ["database": "postgres://"]) == nil)
    }

    @Test func theKeysContextIsIgnored() throws {
        let key = AbsoluteConfigKey(["region"], context: ["environment": .string("production")])
        #expect(try string(key, in: ["region": "eu"]) == "eu")
    }

    @Test func aWatchOfAKeyFollowsItsNameAndEveryLeadingPart() {
        #expect(
            EntryLookup.entryNames(for: ["database", "primary", "host"]) == [
                "database", "database.primary", "database.primary.host",
            ])
        #expect(EntryLookup.entryNames(for: []) == [""])
    }
}
