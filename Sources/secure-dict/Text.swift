#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

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
