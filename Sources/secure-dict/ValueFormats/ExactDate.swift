import FoundationEssentials

/// ISO 8601 dates in UTC that read back to the very same `Date`.
///
/// A stored date is a `Double` of seconds since 2001-01-01T00:00:00Z. `ISO8601DateFormatter`
/// keeps milliseconds only, so an export would not round-trip; here the fraction gets as many
/// digits as it needs (at least 3), e.g. `2026-11-22T03:57:00.123456Z`.
enum ExactDate {
    /// Seconds between 1970-01-01 and 2001-01-01, Foundation's reference date.
    private static let unixSecondsAtReferenceDate = 978_307_200

    /// `yyyy-MM-ddTHH:mm:ss.fffZ` (3 to 20 fraction digits), or `nil` when `date` has no
    /// such form that reads back equal: outside the years 1–9999, not finite, or too close
    /// to the reference date for 20 digits. Callers then use the number of seconds.
    static func format(_ date: Date) -> String? {
        let seconds = date.timeIntervalSinceReferenceDate
        guard seconds.isFinite, abs(seconds) < 4e11 else { return nil }
        let whole = seconds.rounded(.down)
        let fraction = seconds - whole  // exact: both have the same exponent range
        let referenceSeconds = Int(whole)
        let unixSeconds = referenceSeconds + unixSecondsAtReferenceDate
        let days = unixSeconds.floorDivided(by: 86_400)
        let secondOfDay = unixSeconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        guard (1...9999).contains(year) else { return nil }
        for digits in 3...20 {
            let text = formatted("%.\(digits)f", fraction)  // "0.123…", or "1.000…" when rounded up
            guard text.hasPrefix("0."), Double(referenceSeconds) + Double(text)! == seconds else { continue }
            return formatted(
                "%04ld-%02ld-%02ldT%02ld:%02ld:%02ld", year, month, day,
                secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60)
                + text.dropFirst() + "Z"
        }
        return nil
    }

    /// Reads `2026-11-22T03:57:00Z`, `2026-11-22T05:57:00.5+02:00`, `2026-11-22 03:57Z` or a
    /// date alone (`2026-11-22`, midnight UTC). A time needs a zone: `Z` or `±hh:mm`.
    static func parse(_ text: String) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.digits(4), scanner.skip("-"), let month = scanner.digits(2),
            scanner.skip("-"), let day = scanner.digits(2),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), year >= 1
        else { return nil }
        var secondOfDay = 0
        var fraction = "0"
        if !scanner.atEnd {
            guard scanner.skip("T") || scanner.skip("t") || scanner.skip(" "),
                let hour = scanner.digits(2), scanner.skip(":"), let minute = scanner.digits(2),
                hour < 24, minute < 60
            else { return nil }
            var second = 0
            if scanner.skip(":") {
                guard let value = scanner.digits(2), value < 60 else { return nil }
                second = value
                if scanner.skip(".") || scanner.skip(",") {
                    let digits = scanner.digitRun()
                    guard !digits.isEmpty, digits.count <= 40 else { return nil }
                    fraction = "0." + digits
                }
            }
            guard let offset = scanner.zoneOffset(), scanner.atEnd else { return nil }
            secondOfDay = hour * 3600 + minute * 60 + second - offset
        }
        let unixSeconds = days(fromCivil: year, month, day) * 86_400 + secondOfDay
        let referenceSeconds = unixSeconds - unixSecondsAtReferenceDate
        return Date(timeIntervalSinceReferenceDate: Double(referenceSeconds) + Double(fraction)!)
    }

    // MARK: Calendar arithmetic (proleptic Gregorian, after Howard Hinnant's algorithms)

    private static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = z.floorDivided(by: 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = y.floorDivided(by: 400)
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

/// A cursor over ASCII bytes for ``ExactDate/parse(_:)``.
private struct Scanner {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func skip(_ character: Character) -> Bool {
        guard !atEnd, bytes[index] == character.asciiValue else { return false }
        index += 1
        return true
    }

    /// Exactly `count` decimal digits.
    mutating func digits(_ count: Int) -> Int? {
        guard index + count <= bytes.count else { return nil }
        var value = 0
        for byte in bytes[index..<index + count] {
            guard (0x30...0x39).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        index += count
        return value
    }

    mutating func digitRun() -> String {
        let start = index
        while !atEnd, (0x30...0x39).contains(bytes[index]) { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// `Z` (0), or `±hh:mm` / `±hhmm` in seconds east of UTC.
    mutating func zoneOffset() -> Int? {
        if skip("Z") || skip("z") { return 0 }
        let sign: Int
        if skip("+") { sign = 1 } else if skip("-") { sign = -1 } else { return nil }
        guard let hours = digits(2), hours < 24 else { return nil }
        _ = skip(":")
        guard let minutes = digits(2), minutes < 60 else { return nil }
        return sign * (hours * 3600 + minutes * 60)
    }
}

extension Int {
    /// Division rounding toward negative infinity.
    fileprivate func floorDivided(by divisor: Int) -> Int {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
