import Glibc
import SecureDictionary

/// What `exec --mask` does to COMMAND's output: every injected value, in each form a program
/// prints secrets in, becomes a marker naming its key (`<secure-dict:apiToken>`), as the
/// output streams through, whatever the writes that split it.
///
/// ```swift
/// var mask = ExecMask(values: [("apiToken", Array(token.utf8))])
/// let shown = mask.pass(Array("token=\(token)\n".utf8))   // "token=<secure-dict:apiToken>\n"
/// let rest = mask.finish()                                 // at the end of the stream
/// ```
///
/// Streaming: the bytes at the end of a write that could begin a form (a prefix of one) wait
/// for the next write, everything before them goes out at once; at the end of the stream they
/// go out as they are. A form is matched where the longest one starting at a position ends.
/// The forms are kept in one wiped buffer (``SecretBytes``), dropped with the mask.
struct ExecMask {
    /// The shortest value masked unless the user allows shorter ones: a shorter one would
    /// mask common text and tell its length.
    static let shortestValue = 8

    /// The forms, one after the other in `forms`, and where each is: its range and its marker.
    private let forms: SecretBytes
    private let patterns: [(range: Range<Int>, marker: [UInt8])]
    /// The patterns by their first byte.
    private let starting: [[Int]]
    private let longest: Int
    /// The end of the stream so far that could begin a form.
    private var held: [UInt8] = []

    init(values: [(key: String, bytes: [UInt8])]) {
        var all: [UInt8] = []
        var patterns: [(range: Range<Int>, marker: [UInt8])] = []
        for (key, bytes) in values where !bytes.isEmpty {
            let marker = Array("<secure-dict:\(key)>".utf8)
            var seen: [[UInt8]] = []
            for form in Self.forms(of: bytes) where !seen.contains(form) {
                seen.append(form)
                patterns.append((all.count..<(all.count + form.count), marker))
                all += form
            }
            for index in seen.indices { Self.wipe(&seen[index]) }
        }
        forms = all.withUnsafeBytes { SecretBytes(copying: $0) }
        Self.wipe(&all)
        var starting = [[Int]](repeating: [], count: 256)
        forms.withUnsafeBytes { bytes in
            for (index, pattern) in patterns.enumerated() { starting[Int(bytes[pattern.range.lowerBound])].append(index) }
        }
        self.patterns = patterns
        self.starting = starting
        longest = patterns.map(\.range.count).max() ?? 0
    }

    /// The output for `chunk`: what can go out now, every complete form replaced. `chunk` is
    /// read in place; the bytes kept of it are wiped once they go out.
    mutating func pass(_ chunk: UnsafeRawBufferPointer) -> [UInt8] {
        // A new buffer of the right size, the old one wiped: growing `held` in place would
        // free its old storage, which may hold part of a value, unwiped.
        var joined: [UInt8] = []
        joined.reserveCapacity(held.count + chunk.count)
        joined += held
        joined += chunk
        Self.wipe(&held)
        held = joined
        return scan(final: false)
    }

    /// ``pass(_:)-(UnsafeRawBufferPointer)`` of an array's bytes.
    mutating func pass(_ chunk: [UInt8]) -> [UInt8] {
        chunk.withUnsafeBytes { pass($0) }
    }

    /// What was held at the end of the stream, every complete form replaced.
    mutating func finish() -> [UInt8] {
        scan(final: true)
    }

    /// Replaces the forms in `held` and returns what is settled; keeps the tail that could
    /// still become a form unless `final`.
    private mutating func scan(final: Bool) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(held.count)
        var position = 0
        forms.withUnsafeBytes { forms in
            while position < held.count {
                let (complete, couldGrow) = match(at: position, in: forms)
                if couldGrow && !final { break }
                if let complete {
                    output += patterns[complete].marker
                    position += patterns[complete].range.count
                } else {
                    output.append(held[position])
                    position += 1
                }
            }
        }
        Self.wipeFront(&held, count: position)
        return output
    }

    /// The longest form complete at `position`, and whether a longer one could still be
    /// (`held` ends inside it).
    private func match(at position: Int, in forms: UnsafeRawBufferPointer) -> (complete: Int?, couldGrow: Bool) {
        var complete: Int?
        var couldGrow = false
        let available = held.count - position
        for index in starting[Int(held[position])] {
            let range = patterns[index].range
            let compared = min(range.count, available)
            let agrees = held.withUnsafeBytes { heldBytes in
                memcmp(heldBytes.baseAddress! + position, forms.baseAddress! + range.lowerBound, compared) == 0
            }
            guard agrees else { continue }
            if range.count > available {
                couldGrow = true
            } else if complete.map({ patterns[$0].range.count < range.count }) ?? true {
                complete = index
            }
        }
        return (complete, couldGrow)
    }

    /// The forms a program prints a secret in: as it is; base64, standard and URL-safe, with
    /// and without padding; hex, both cases; percent-encoded, both cases; JSON-escaped, with
    /// UTF-8 kept and as `\u` escapes.
    static func forms(of value: [UInt8]) -> [[UInt8]] {
        let standard = base64(value, alphabet: standardAlphabet)
        let urlSafe = base64(value, alphabet: urlSafeAlphabet)
        let unpadded = { (text: [UInt8]) in Array(text.prefix { $0 != UInt8(ascii: "=") }) }
        return [
            value, standard, unpadded(standard), urlSafe, unpadded(urlSafe),
            hex(value, digits: lowerDigits), hex(value, digits: upperDigits),
            percentEncoded(value, digits: upperDigits), percentEncoded(value, digits: lowerDigits),
            jsonEscaped(value, asciiOnly: false), jsonEscaped(value, asciiOnly: true),
        ]
    }

    private static let standardAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlSafeAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let lowerDigits = Array("0123456789abcdef".utf8)
    private static let upperDigits = Array("0123456789ABCDEF".utf8)

    private static func base64(_ bytes: [UInt8], alphabet: [UInt8]) -> [UInt8] {
        var text: [UInt8] = []
        for start in stride(from: 0, to: bytes.count, by: 3) {
            let group = bytes[start..<min(start + 3, bytes.count)]
            let value = group.enumerated().reduce(0) { $0 | Int($1.element) << (16 - 8 * $1.offset) }
            for index in 0..<4 {
                text.append(index <= group.count ? alphabet[(value >> (18 - 6 * index)) & 63] : UInt8(ascii: "="))
            }
        }
        return text
    }

    private static func hex(_ bytes: [UInt8], digits: [UInt8]) -> [UInt8] {
        bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }
    }

    /// RFC 3986: the unreserved characters as they are, every other byte as `%XX`.
    private static func percentEncoded(_ bytes: [UInt8], digits: [UInt8]) -> [UInt8] {
        bytes.flatMap { byte -> [UInt8] in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                [byte]
            default: [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]]
            }
        }
    }

    /// The inside of a JSON string: `"`, `\` and control characters escaped; other
    /// characters as UTF-8, or (`asciiOnly`, as Python's `json.dumps` does) as `\uxxxx`.
    private static func jsonEscaped(_ bytes: [UInt8], asciiOnly: Bool) -> [UInt8] {
        var text: [UInt8] = []
        let escape = { (unit: UInt16) in
            text += Array("\\u".utf8) + [12, 8, 4, 0].map { lowerDigits[Int((unit >> UInt16($0)) & 15)] }
        }
        for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            switch scalar {
            case "\"": text += Array("\\\"".utf8)
            case "\\": text += Array("\\\\".utf8)
            case "\n": text += Array("\\n".utf8)
            case "\r": text += Array("\\r".utf8)
            case "\t": text += Array("\\t".utf8)
            case "\u{8}": text += Array("\\b".utf8)
            case "\u{c}": text += Array("\\f".utf8)
            case _ where scalar.value < 0x20: escape(UInt16(scalar.value))
            case _ where scalar.value >= 0x80 && asciiOnly: UTF16.encode(scalar) { escape($0) }
            default: text += Array(String(scalar).utf8)
            }
        }
        return text
    }

    private static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
    }

    /// Drops the first `count` bytes of `bytes`, leaving no copy of any of them.
    private static func wipeFront(_ bytes: inout [UInt8], count: Int) {
        var rest = Array(bytes[count...])
        wipe(&bytes)
        swap(&bytes, &rest)
    }
}
