/// Finds JSON object keys that Swift treats as one key, which `JSONDecoder` merges silently,
/// keeping only one of their values.
///
/// ```swift
/// if let duplicate = JSONDuplicateKeys.first(in: Array(data)) {
///     print(duplicate.description)   // "entries 1 and 2 of the top-level object"
/// }
/// ```
///
/// Two keys collide when their text is the same, or canonically equivalent although the
/// bytes differ ("é" as U+00E9 and as "e" + U+0301): Swift's `String` equality, which
/// dictionary keys use. The scan reports positions, never the keys themselves. It expects
/// JSON that has already parsed; on anything else it returns nil rather than failing.
enum JSONDuplicateKeys {
    /// Where two keys collide: their 1-based positions in one object, and how deep it is.
    struct Collision: Equatable, CustomStringConvertible {
        /// 1 for the top-level object, 2 for an object inside it, and so on.
        let depth: Int
        let first: Int
        let second: Int

        var description: String {
            let object = depth == 1 ? "the top-level object" : "an object at nesting depth \(depth)"
            return "entries \(first) and \(second) of \(object)"
        }
    }

    /// The first collision in document order, or nil when every object's keys are distinct.
    static func first(in json: [UInt8]) -> Collision? {
        var scanner = Scanner(bytes: json)
        return scanner.value(depth: 0)
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        private mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        /// Scans one value; `depth` counts the objects around it.
        mutating func value(depth: Int) -> Collision? {
            skipWhitespace()
            switch current {
            case UInt8(ascii: "{"): return object(depth: depth + 1)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""):
                _ = string()
                return nil
            default:
                // A number, true, false or null: up to the next delimiter.
                while let byte = current, !",]} \t\r\n".utf8.contains(byte) { index += 1 }
                return nil
            }
        }

        private mutating func array(depth: Int) -> Collision? {
            index += 1
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                index += 1
                return nil
            }
            while current != nil {
                if let collision = value(depth: depth) { return collision }
                guard skipSeparator() else { return nil }
            }
            return nil
        }

        private mutating func object(depth: Int) -> Collision? {
            index += 1
            var positions: [String: Int] = [:]
            var position = 0
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                index += 1
                return nil
            }
            while current != nil {
                skipWhitespace()
                guard current == UInt8(ascii: "\""), let key = string() else { return nil }
                position += 1
                if let earlier = positions[key] { return Collision(depth: depth, first: earlier, second: position) }
                positions[key] = position
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { return nil }
                index += 1
                if let collision = value(depth: depth) { return collision }
                guard skipSeparator() else { return nil }
            }
            return nil
        }

        /// Steps over what follows a container's element: true after a `,` (another element
        /// comes), false at the container's end (or anything else).
        private mutating func skipSeparator() -> Bool {
            skipWhitespace()
            let separator = current
            index += 1
            return separator == UInt8(ascii: ",")
        }

        /// A string token's text, escapes resolved; the scanner stands on its opening quote.
        private mutating func string() -> String? {
            index += 1
            var utf8: [UInt8] = []
            var pendingHighSurrogate: UInt32?
            while let byte = current {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: utf8, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escape = current else { return nil }
                    index += 1
                    if escape == UInt8(ascii: "u") {
                        guard index + 4 <= bytes.count,
                            let unit = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
                        else { return nil }
                        index += 4
                        if (0xD800..<0xDC00).contains(unit) {
                            pendingHighSurrogate = unit
                            continue
                        }
                        var scalarValue = unit
                        if (0xDC00..<0xE000).contains(unit), let high = pendingHighSurrogate {
                            scalarValue = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00)
                        }
                        utf8 += Array(String(Unicode.Scalar(scalarValue).map(Character.init) ?? "\u{FFFD}").utf8)
                    } else {
                        let resolved: UInt8 =
                            switch escape {
                            case UInt8(ascii: "b"): 0x08
                            case UInt8(ascii: "f"): 0x0C
                            case UInt8(ascii: "n"): 0x0A
                            case UInt8(ascii: "r"): 0x0D
                            case UInt8(ascii: "t"): 0x09
                            default: escape  // \" \\ \/
                            }
                        utf8.append(resolved)
                    }
                default:
                    utf8.append(byte)
                }
                pendingHighSurrogate = nil
            }
            return nil
        }
    }
}
