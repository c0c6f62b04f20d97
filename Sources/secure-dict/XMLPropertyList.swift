import SecureDictionary

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// XML property lists, for other tools. Written by FoundationEssentials' `PropertyListEncoder`
/// from our own values (which are trusted); never read: Foundation's parsers must not see
/// untrusted bytes, and the format cannot hold what SecureDictionary stores exactly.
enum XMLPropertyList {
    static func encode(_ entries: [String: PropertyListValue]) throws -> Data {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .xml
        return try encoder.encode(entries.mapValues(Element.init))
    }

    /// A value as the property-list type of its case: the encoder writes `Date` and `Data` as
    /// `<date>` and `<data>`.
    private struct Element: Encodable {
        let value: PropertyListValue

        init(_ value: PropertyListValue) { self.value = value }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch value {
            case .string(let string): try container.encode(string)
            case .integer(let integer): try container.encode(integer)
            case .unsignedInteger(let integer): try container.encode(integer)
            case .real(let real): try container.encode(real)
            case .bool(let bool): try container.encode(bool)
            case .date(let date): try container.encode(date)
            case .data(let data): try container.encode(data)
            case .array(let array): try container.encode(array.map(Element.init))
            case .dictionary(let dictionary): try container.encode(dictionary.mapValues(Element.init))
            }
        }
    }

    /// What the XML form loses of `entries`, or `nil` when it keeps everything.
    static func loss(in entries: [String: PropertyListValue]) -> String? {
        var fractionalDates = false
        var controlCharacters = false
        func visit(_ value: PropertyListValue) {
            switch value {
            case .date(let date):
                let seconds = date.timeIntervalSinceReferenceDate
                if seconds.rounded(.down) != seconds { fractionalDates = true }
            case .string(let string): if hasControlCharacters(string) { controlCharacters = true }
            case .array(let array): array.forEach(visit)
            case .dictionary(let dictionary):
                for (key, value) in dictionary {
                    if hasControlCharacters(key) { controlCharacters = true }
                    visit(value)
                }
            case .integer, .unsignedInteger, .real, .bool, .data: break
            }
        }
        visit(.dictionary(entries))
        let losses = [
            fractionalDates ? "rounds dates down to the whole second" : nil,
            controlCharacters ? "drops control characters from strings" : nil,
        ].compactMap { $0 }
        return losses.isEmpty ? nil : losses.joined(separator: ", ")
    }

    private static func hasControlCharacters(_ string: String) -> Bool {
        string.unicodeScalars.contains { $0.properties.generalCategory == .control && !"\t\n\r".unicodeScalars.contains($0) }
    }
}
