import Foundation
import SecureDictionary

/// XML property lists, for other tools. Written by Foundation from our own values (which are
/// trusted); never read: Foundation's parsers must not see untrusted bytes, and the format
/// cannot hold what SecureDictionary stores exactly.
enum XMLPropertyList {
    static func encode(_ entries: [String: PropertyListValue]) throws -> Data {
        try PropertyListSerialization.data(fromPropertyList: entries.mapValues(\.foundationObject), format: .xml, options: 0)
    }

    /// What the XML form loses of `entries`, or `nil` when it keeps everything.
    static func loss(in entries: [String: PropertyListValue]) -> String? {
        var fractionalDates = false
        var controlCharacters = false
        var negativeZero = false
        func visit(_ value: PropertyListValue) {
            switch value {
            case .date(let date):
                let seconds = date.timeIntervalSinceReferenceDate
                if seconds.rounded(.down) != seconds { fractionalDates = true }
            case .string(let string): if hasControlCharacters(string) { controlCharacters = true }
            case .real(let real): if real == 0, real.sign == .minus { negativeZero = true }
            case .array(let array): array.forEach(visit)
            case .dictionary(let dictionary):
                for (key, value) in dictionary {
                    if hasControlCharacters(key) { controlCharacters = true }
                    visit(value)
                }
            case .integer, .unsignedInteger, .bool, .data: break
            }
        }
        visit(.dictionary(entries))
        let losses = [
            fractionalDates ? "rounds dates down to the whole second" : nil,
            controlCharacters ? "drops control characters from strings" : nil,
            negativeZero ? "writes -0.0 as 0.0" : nil,
        ].compactMap { $0 }
        return losses.isEmpty ? nil : losses.joined(separator: ", ")
    }

    private static func hasControlCharacters(_ string: String) -> Bool {
        string.unicodeScalars.contains { $0.properties.generalCategory == .control && !"\t\n\r".unicodeScalars.contains($0) }
    }
}
