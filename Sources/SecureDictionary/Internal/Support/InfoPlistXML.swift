/// The `CFBundleIdentifier` of an XML `Info.plist`, for ``MainBundle``: a reader of that one
/// entry, not of property lists.
///
/// ```swift
/// let identifier = InfoPlistXML.bundleIdentifier(in: bytes)   // "com.example.app", or nil
/// ```
///
/// Not `PropertyListSerialization`: ``MainBundle`` must not load Foundation, and Foundation's
/// parser must never see bytes another process may have written (design invariant 6). One pass
/// over at most ``MainBundle/maximumInfoPlistSize`` bytes, no state beyond the nesting depth, no
/// reference followed. Comments, processing instructions and a `DOCTYPE` without an internal
/// subset are skipped; the identifier is the `<string>` after the first
/// `<key>CFBundleIdentifier</key>` of the root `<dict>`, predefined and numeric character
/// references decoded. What it cannot follow (an internal subset, CDATA, markup inside a key
/// or string) gives nil.
enum InfoPlistXML {
    static func bundleIdentifier(in bytes: [UInt8]) -> String? {
        var scanner = Scanner(bytes: bytes)
        var depth = 0  // containers open; the root dictionary is 1
        var afterIdentifierKey = false
        while let tag = scanner.nextTag() {
            guard let tag else { return nil }
            switch (tag.name, tag.kind) {
            case ("dict", .open), ("array", .open):
                if depth == 0 && tag.name != "dict" { return nil }
                if depth == 1 && afterIdentifierKey { return nil }
                depth += 1
            case ("dict", .close), ("array", .close):
                depth -= 1
                if depth <= 0 { return nil }
            case ("key", .open) where depth == 1:
                guard let key = scanner.text(until: "key") else { return nil }
                afterIdentifierKey = key == "CFBundleIdentifier"
            case ("string", .open) where depth == 1:
                guard let value = scanner.text(until: "string") else { return nil }
                if afterIdentifierKey { return value }
            case ("string", .empty) where depth == 1:
                if afterIdentifierKey { return "" }
            case ("plist", _), (_, .close):
                break
            default:
                // Another value (integer, true, data…), or anything inside a nested container.
                if depth == 1 && afterIdentifierKey { return nil }
            }
        }
        return nil
    }

    enum TagKind { case open, close, empty }

    /// One pass over the bytes, from tag to tag.
    struct Scanner {
        let bytes: [UInt8]
        var index = 0

        /// The next element tag: nil at the end, `.some(nil)` for markup it cannot follow.
        mutating func nextTag() -> (name: String, kind: TagKind)?? {
            while let start = find("<", from: index) {
                let skipped = [("<!--", "-->"), ("<?", "?>"), ("<!", ">")]
                if let (open, close) = skipped.first(where: { bytes[start...].starts(with: $0.0.utf8) }) {
                    guard let end = find(close, from: start + open.utf8.count),
                        open != "<!" || !bytes[start..<end].contains(UInt8(ascii: "["))
                    else { return .some(nil) }
                    index = end + close.utf8.count
                } else {
                    guard let end = find(">", from: start + 1) else { return .some(nil) }
                    index = end + 1
                    var inside = bytes[(start + 1)..<end]
                    let closing = inside.first == UInt8(ascii: "/")
                    let empty = inside.last == UInt8(ascii: "/")
                    if closing { inside = inside.dropFirst() }
                    if empty { inside = inside.dropLast() }
                    let name = inside.prefix { $0 != UInt8(ascii: " ") && $0 != 9 && $0 != 10 && $0 != 13 }
                    return (String(decoding: name, as: UTF8.self), closing ? .close : empty ? .empty : .open)
                }
            }
            return nil
        }

        /// The text up to `</name>`, its character references decoded, and moves past it; nil
        /// when there is markup before it or a reference it does not know.
        mutating func text(until name: String) -> String? {
            guard let end = find("</\(name)>", from: index) else { return nil }
            let raw = bytes[index..<end]
            index = end + name.utf8.count + 3
            guard !raw.contains(UInt8(ascii: "<")) else { return nil }
            let parts = raw.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false)
            var decoded = Array(parts[0])
            for part in parts.dropFirst() {  // each starts with a reference, up to its ";"
                guard let semicolon = part.firstIndex(of: UInt8(ascii: ";")),
                    let scalar = Self.reference(String(decoding: part[..<semicolon], as: UTF8.self))
                else { return nil }
                decoded += Array(String(Character(scalar)).utf8) + part[(semicolon + 1)...]
            }
            return String(decoding: decoded, as: UTF8.self)
        }

        /// `amp`, `lt`, `gt`, `quot`, `apos`, `#N` and `#xN`.
        static func reference(_ name: String) -> Unicode.Scalar? {
            let named: [String: Unicode.Scalar] = ["amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'"]
            if let scalar = named[name] { return scalar }
            guard name.hasPrefix("#") else { return nil }
            let digits = name.dropFirst()
            let value = digits.hasPrefix("x") ? UInt32(digits.dropFirst(), radix: 16) : UInt32(digits)
            return value.flatMap(Unicode.Scalar.init)
        }

        /// Where `text` next starts at or after `start`.
        func find(_ text: String, from start: Int) -> Int? {
            let pattern = Array(text.utf8)
            guard start <= bytes.count - pattern.count else { return nil }
            return (start...(bytes.count - pattern.count)).first {
                bytes[$0] == pattern[0] && bytes[$0..<($0 + pattern.count)].elementsEqual(pattern)
            }
        }
    }
}
