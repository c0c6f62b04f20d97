import FoundationEssentials
import SecureDictionary

/// XML property lists, for other tools (plutil, Python's plistlib, Xcode). Written here, from
/// our own values; never read: Foundation's parsers must not see untrusted bytes, and the
/// format cannot hold everything SecureDictionary stores.
///
/// ```swift
/// let xml = XMLPropertyList.encode(["retries": .integer(3)])
/// let note = XMLPropertyList.loss(in: entries)   // what the XML does not keep, or nil
/// ```
///
/// The output is always well-formed XML 1.0, which FoundationEssentials' `PropertyListEncoder`
/// did not guarantee (it wrote a NUL or a U+0001 as it is, which no XML parser reads). What
/// XML cannot hold is replaced, and ``loss(in:)`` says so:
/// - characters XML 1.0 forbids even as references (C0 controls other than tab, line feed and
///   carriage return; U+FFFE, U+FFFF) become U+FFFD; a carriage return is kept, as `&#13;`;
/// - dates to the whole second (rounded down), in the years 1–9999 that the `<date>` form
///   has; other dates, and dates that are not finite, become `<real>` seconds since
///   2001-01-01T00:00:00Z, as in the JSON form;
/// - a NaN is `nan`, without its payload.
enum XMLPropertyList {
    /// The XML property list of `entries`, keys sorted.
    ///
    /// - Throws: a ``CommandFailure/inputOutput(_:)`` when two keys of one dictionary become
    ///   the same once the characters XML cannot hold are replaced.
    static func encode(_ entries: [String: PropertyListValue]) throws(CommandFailure) -> Data {
        var writer = Writer()
        writer.text = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        try writer.write(.dictionary(entries), depth: 0)
        writer.text += "</plist>\n"
        return Data(writer.text.utf8)
    }

    /// What the XML form loses of `entries`, as the end of a sentence, or `nil` when it keeps
    /// everything.
    static func loss(in entries: [String: PropertyListValue]) -> String? {
        var fractionalDates = false
        var datesAsReals = false
        var replacedCharacters = false
        var nanPayloads = false
        func visit(_ value: PropertyListValue) {
            switch value {
            case .date(let date):
                let seconds = date.timeIntervalSinceReferenceDate
                if !hasDateForm(seconds) {
                    datesAsReals = true
                } else if seconds.rounded(.down) != seconds {
                    fractionalDates = true
                }
            case .real(let real): if real.isNaN, real.bitPattern != Double.nan.bitPattern { nanPayloads = true }
            case .string(let string): if string.unicodeScalars.contains(where: isForbidden) { replacedCharacters = true }
            case .array(let array): array.forEach(visit)
            case .dictionary(let dictionary):
                for (key, value) in dictionary {
                    if key.unicodeScalars.contains(where: isForbidden) { replacedCharacters = true }
                    visit(value)
                }
            case .integer, .unsignedInteger, .bool, .data: break
            }
        }
        visit(.dictionary(entries))
        let losses = [
            fractionalDates ? "rounds dates down to the whole second" : nil,
            datesAsReals
                ? "writes dates outside the years 1-9999 (or not finite) as <real> seconds since 2001-01-01T00:00:00Z" : nil,
            replacedCharacters
                ? "replaces the control characters XML cannot hold (all but tab, line feed and carriage return) "
                    + "with U+FFFD in strings and keys" : nil,
            nanPayloads ? "writes every NaN as nan, without its payload bits" : nil,
        ].compactMap { $0 }
        return losses.isEmpty ? nil : losses.joined(separator: ", ")
    }

    // MARK: Writing

    private struct Writer {
        var text = ""

        mutating func write(_ value: PropertyListValue, depth: Int) throws(CommandFailure) {
            let indent = String(repeating: "\t", count: depth)
            switch value {
            case .string(let string): text += "\(indent)<string>\(escaped(string))</string>\n"
            case .integer(let integer): text += "\(indent)<integer>\(integer)</integer>\n"
            case .unsignedInteger(let integer): text += "\(indent)<integer>\(integer)</integer>\n"
            case .real(let real): text += "\(indent)<real>\(XMLPropertyList.text(of: real))</real>\n"
            case .bool(let bool): text += "\(indent)<\(bool ? "true" : "false")/>\n"
            case .date(let date):
                let seconds = date.timeIntervalSinceReferenceDate
                if hasDateForm(seconds),
                    let whole = ExactDate.format(Date(timeIntervalSinceReferenceDate: seconds.rounded(.down)))
                {
                    // "2026-11-22T03:57:00.000Z" without its fraction, which the <date> form has not.
                    text += "\(indent)<date>\(whole.prefix(19))Z</date>\n"
                } else {
                    text += "\(indent)<real>\(XMLPropertyList.text(of: seconds))</real>\n"
                }
            case .data(let data): text += "\(indent)<data>\(data.base64EncodedString())</data>\n"
            case .array(let array):
                if array.isEmpty {
                    text += "\(indent)<array/>\n"
                } else {
                    text += "\(indent)<array>\n"
                    for element in array { try write(element, depth: depth + 1) }
                    text += "\(indent)</array>\n"
                }
            case .dictionary(let dictionary):
                if dictionary.isEmpty {
                    text += "\(indent)<dict/>\n"
                    return
                }
                var written = Set<String>()
                text += "\(indent)<dict>\n"
                for key in dictionary.keys.sorted() {
                    let xmlKey = escaped(key)
                    guard written.insert(xmlKey).inserted else {
                        throw .inputOutput(
                            "cannot write an XML property list: two keys of one dictionary differ only in control "
                                + "characters, which XML cannot hold; use --format json or binary-plist")
                    }
                    text += "\(indent)\t<key>\(xmlKey)</key>\n"
                    try write(dictionary[key]!, depth: depth + 1)
                }
                text += "\(indent)</dict>\n"
            }
        }

        /// `string` as XML character data: markup escaped, a carriage return as a reference
        /// (a parser would read a raw one as a line feed), forbidden characters as U+FFFD.
        private func escaped(_ string: String) -> String {
            var result = ""
            for scalar in string.unicodeScalars {
                switch scalar {
                case "&": result += "&amp;"
                case "<": result += "&lt;"
                case ">": result += "&gt;"
                case "\r": result += "&#13;"
                case _ where isForbidden(scalar): result += "\u{FFFD}"
                default: result.unicodeScalars.append(scalar)
                }
            }
            return result
        }
    }

    /// Characters that XML 1.0 allows neither as they are nor as references.
    static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D: false
        case 0x00...0x1F, 0xFFFE, 0xFFFF: true
        default: false
        }
    }

    /// Whether a date of `seconds` since 2001-01-01 has the `<date>` form, which holds the
    /// years 1–9999 (whole seconds, rounded down).
    private static func hasDateForm(_ seconds: Double) -> Bool {
        // 0001-01-01T00:00:00Z and 10000-01-01T00:00:00Z, in seconds since 2001-01-01.
        seconds.isFinite && seconds >= -63_113_904_000 && seconds < 252_423_993_600
    }

    /// A real as property-list readers take it: the shortest text that reads back exactly,
    /// without a `.0` (`0.1`, `3`, `-0`, `5e-324`, as Foundation wrote them), and Apple's
    /// `nan`, `+infinity`, `-infinity`.
    private static func text(of real: Double) -> String {
        if real.isNaN { return "nan" }
        if real.isInfinite { return real > 0 ? "+infinity" : "-infinity" }
        let text = real.description
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }
}
