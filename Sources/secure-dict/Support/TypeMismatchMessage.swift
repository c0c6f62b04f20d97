import SecureDictionary

/// The tool's sentence for `SecureDictionaryError.typeMismatch(expected:found:)`: the library
/// names the type asked for as Swift spells it (`Int`) and the stored one as a property list
/// does (`string`), with no fix; the tool says both as `read` shows types and `write --type`
/// takes them, and how to see and change the stored type.
///
/// ```swift
/// TypeMismatchMessage.text(expected: "Int", found: "string")
/// // "A stored value is a string, not the integer that was asked for (Int): …"
/// ```
enum TypeMismatchMessage {
    static func text(expected: String, found: String) -> String {
        let wanted = typeName(expected)
        let asked = wanted == expected ? "" : " (\(expected))"
        let type = ValueType(argument: wanted).map { " --type \($0.rawValue)" } ?? ""
        return "A stored value is \(withArticle(found)), not the \(wanted) that was asked for\(asked): see each key's "
            + "type with 'secure-dict read --app ID --name NAME', and store the value as \(withArticle(wanted)) with "
            + "'secure-dict write --app ID --name NAME KEY VALUE\(type)'."
    }

    /// A Swift type's name (`Int`, `[String]`, `Dictionary<String, Int>`) as the property-list
    /// type it reads; any other name as it is.
    static func typeName(_ swift: String) -> String {
        switch swift {
        case "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64", "int": "integer"
        case "Double", "Float", "double": "real"
        case "Bool": "bool"
        case "String": "string"
        case "Date": "date"
        case "Data", "bytes": "data"
        default:
            if swift.hasPrefix("Dictionary<") || (swift.hasPrefix("[") && swift.contains(":")) {
                "dictionary"
            } else if swift.hasPrefix("Array<") || swift.hasPrefix("[") {
                "array"
            } else {
                swift
            }
        }
    }

    /// "a string", "an integer", "data".
    private static func withArticle(_ type: String) -> String {
        if type == "data" { return type }
        return (type.first.map { "aeiou".contains($0) } == true ? "an " : "a ") + type
    }
}
