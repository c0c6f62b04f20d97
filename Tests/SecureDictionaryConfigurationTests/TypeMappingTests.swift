import Configuration
import Foundation
import SecureDictionary
import SecureDictionaryConfiguration
import Testing

/// Stored values convert only to the type they are stored as, except exact numbers; any
/// other type is a `typeMismatch` naming types only.
@Suite struct TypeMapping {
    func content(_ value: PropertyListValue, as type: ConfigType) throws -> ConfigContent? {
        try ProviderFixture(["k": value]).provider.value(forKey: ["k"], type: type).value?.content
    }

    /// A stored value, the type asked for, and what comes back: the content or, as a
    /// string, the stored type a mismatch names.
    struct Example<Outcome: Sendable>: Sendable, CustomTestStringConvertible {
        let value: PropertyListValue
        let type: ConfigType
        let outcome: Outcome
        init(_ value: PropertyListValue, _ type: ConfigType, _ outcome: Outcome) {
            (self.value, self.type, self.outcome) = (value, type, outcome)
        }
        var testDescription: String { "\(value.typeName) as \(type.rawValue)" }
    }

    @Test(arguments: [
        Example(.string("s"), .string, ConfigContent.string("s")),
        Example(.integer(-7), .int, .int(-7)),
        Example(.real(2.5), .double, .double(2.5)),
        Example(.bool(true), .bool, .bool(true)),
        Example(.data(Data([0, 1, 255])), .bytes, .bytes([0, 1, 255])),
        Example(["a", "b"], .stringArray, .stringArray(["a", "b"])),
        Example([1, 2], .intArray, .intArray([1, 2])),
        Example([1.5, 2], .doubleArray, .doubleArray([1.5, 2])),
        Example([true, false], .boolArray, .boolArray([true, false])),
        Example([.data(Data([1])), .data(Data())], .byteChunkArray, .byteChunkArray([[1], []])),
        Example([], .intArray, .intArray([])),
        Example([], .byteChunkArray, .byteChunkArray([])),
    ])
    func eachTypeReadsAsItIsStored(_ example: Example<ConfigContent>) throws {
        #expect(try content(example.value, as: example.type) == example.outcome)
    }

    @Test func exactNumbersConvertBetweenIntegerAndReal() throws {
        #expect(try content(.integer(5), as: .double) == .double(5))
        #expect(try content(.real(5), as: .int) == .int(5))
        #expect(try content([1, 2.0], as: .intArray) == .intArray([1, 2]))
        #expect(try content([1, 2.5], as: .doubleArray) == .doubleArray([1, 2.5]))
        #expect(try content(.unsignedInteger(UInt64(Int.max) + 1), as: .double) == .double(9_223_372_036_854_775_808))
    }

    @Test(arguments: [
        Example(.real(5.5), .int, "real"),
        Example(.unsignedInteger(UInt64.max), .int, "integer"),
        Example(.string("5"), .int, "string"),
        Example(.integer(1), .bool, "integer"),
        Example(.bool(true), .int, "bool"),
        Example(.string("aGk="), .bytes, "string"),
        Example(.date(Date(timeIntervalSinceReferenceDate: 0)), .string, "date"),
        Example(["host": "h"], .string, "dictionary"),
        Example(.string("a,b"), .stringArray, "string"),
        Example(["a", 1], .stringArray, "an array element of type integer"),
        Example([1, 2.5], .intArray, "an array element of type real"),
    ])
    func anotherTypeIsATypeMismatchNamingTypesOnly(_ example: Example<String>) throws {
        let error = #expect(throws: SecureDictionaryError.self) { try content(example.value, as: example.type) }
        #expect(error == .typeMismatch(expected: example.type.rawValue, found: example.outcome))
    }
}
