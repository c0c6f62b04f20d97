import FoundationEssentials  // `foundationObject` is an `Any`: no Foundation type in the API

extension PropertyListValue {
    /// The value as a Foundation property-list object, for `PropertyListSerialization`
    /// (XML or binary) and other Foundation APIs.
    ///
    /// ```swift
    /// let xml = try PropertyListSerialization.data(
    ///     fromPropertyList: PropertyListValue.dictionary(tokens.snapshot).foundationObject,
    ///     format: .xml, options: 0)
    /// ```
    ///
    /// Each case maps to its own type: `String`, `Int`, `UInt64`, `Double`, `Bool`, `Date`,
    /// `Data`, `[Any]` and `[String: Any]`. The result is an ordinary Foundation value: a copy
    /// of the secret that this library cannot wipe.
    public var foundationObject: Any {
        switch self {
        case .string(let string): string
        case .integer(let integer): integer
        case .unsignedInteger(let integer): integer
        case .real(let real): real
        case .bool(let bool): bool
        case .date(let date): date
        case .data(let data): data
        case .array(let elements): elements.map(\.foundationObject)
        case .dictionary(let entries): entries.mapValues(\.foundationObject)
        }
    }
}
