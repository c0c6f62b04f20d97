import Glibc

/// The few `NSString` methods the tool used, which FoundationEssentials does not have.
///
/// ```swift
/// formatted("%.1f", 2.25)                         // "2.2", as String(format:) and printf(3)
/// " y \n".trimmingWhitespace(andNewlines: true)   // "y"
/// "ok".padded(to: 5)                               // "ok   "
/// ```
extension String {
    /// The string without the spaces around it: what `trimmingCharacters(in:)` removes with
    /// `CharacterSet.whitespaces` (tab, Unicode's space separators and U+200B) or, with
    /// `andNewlines`, `.whitespacesAndNewlines` (also U+000A–U+000D, U+0085, U+2028, U+2029).
    func trimmingWhitespace(andNewlines: Bool = false) -> String {
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar.value {
            case 0x09, 0x20, 0xA0, 0x1680, 0x2000...0x200B, 0x202F, 0x205F, 0x3000: true
            case 0x0A...0x0D, 0x85, 0x2028, 0x2029: andNewlines
            default: false
            }
        }
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
            let last = scalars.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(scalars[first...last])
    }

    /// The string followed by spaces up to `width` characters; a longer string as it is.
    ///
    /// Unlike `padding(toLength:withPad:startingAt:)`, which counts UTF-16 units and cuts a
    /// longer string, it counts characters, as the column widths of `list` do.
    func padded(to width: Int) -> String {
        self + String(repeating: " ", count: Swift.max(0, width - count))
    }
}

/// `printf(3)` formatting of numbers, which is what `String(format:)` does with them.
func formatted(_ format: String, _ arguments: any CVarArg...) -> String {
    let length = withVaList(arguments) { vsnprintf(nil, 0, format, $0) }
    guard length >= 0 else { return "" }
    var buffer = [CChar](repeating: 0, count: Int(length) + 1)
    _ = withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) }
    return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

/// Names as a terminal can show them without deceiving: a name that holds an invisible or
/// layout-changing character is quoted, with that character escaped.
///
/// ```swift
/// VisibleText.escaped("settings")             // settings
/// VisibleText.escaped("txt.\u{202E}exe")      // "txt.\u202eexe"
/// VisibleText.escaped("a\u{2028}b")           // "a\u2028b"
/// ```
///
/// Escaped are control characters (C0, DEL, C1), format characters (bidirectional overrides
/// and isolates such as U+202E, which reverse the text after them; zero-width spaces; soft
/// hyphens), line and paragraph separators (U+2028, U+2029), private-use and unassigned code
/// points. Not U+200D, which joins emoji. The escapes are those of C, Python and bash's
/// `$'…'`: `\uXXXX`, `\UXXXXXXXX`, `\\` and `\"`.
enum VisibleText {
    /// Whether a terminal could show `scalar` as nothing, or let it change what follows.
    static func isDeceptive(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator, .privateUse, .unassigned, .surrogate: true
        case .format: scalar != "\u{200D}"
        default: false
        }
    }

    /// `text` as it is, or quoted with escapes when it holds a deceptive character or could be
    /// taken for a quoted text.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isDeceptive) || text.hasPrefix("\"") else { return text }
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case _ where isDeceptive(scalar): result += escape(scalar)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    /// JSON text with every deceptive character that `JSONEncoder` leaves raw written as a
    /// `\uXXXX` escape (a surrogate pair above U+FFFF): the same JSON value, safe on a terminal.
    /// Outside strings, JSON text holds ASCII only, so this touches strings alone.
    static func escapingJSON(_ json: String) -> String {
        var result = ""
        for scalar in json.unicodeScalars {
            if scalar.value > 0x7F, isDeceptive(scalar) {
                for unit in String(scalar).utf16 { result += "\\u" + hex(UInt32(unit), digits: 4) }
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func escape(_ scalar: Unicode.Scalar) -> String {
        scalar.value <= 0xFFFF ? "\\u" + hex(scalar.value, digits: 4) : "\\U" + hex(scalar.value, digits: 8)
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
