import Foundation
import SecureDictionary
import SecureDictionaryTestSupport

/// The data every scenario uses: deterministic, so each run stores the same bytes.
enum Fixtures {
    /// `count` settings-like entries of mixed types, about 37–42 bytes each once encoded
    /// (1,000 entries ≈ 37 KB): keys like `setting-00042`; values cycle through
    /// string (16-character token), integer, real, bool, date, 16-byte data, a two-string
    /// array and a two-entry dictionary.
    static func mixedEntries(count: Int, seed: UInt64 = 42) -> [String: PropertyListValue] {
        var generator = SplitMix64(seed: seed)
        var entries: [String: PropertyListValue] = [:]
        entries.reserveCapacity(count)
        for index in 0..<count {
            entries[key(index)] = value(index, &generator)
        }
        return entries
    }

    static func key(_ index: Int) -> String {
        let digits = String(index)
        return "setting-" + String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }

    static func value(_ index: Int, _ generator: inout SplitMix64) -> PropertyListValue {
        switch index % 8 {
        case 0: .string(token(16, &generator))
        case 1: .integer(Int(generator.next() % 1_000_000))
        case 2: .real(Double(generator.next() % 1_000_000) / 1000)
        case 3: .bool(generator.next() % 2 == 0)
        case 4: .date(Date(timeIntervalSinceReferenceDate: Double(generator.next() % 1_000_000_000)))
        case 5: .data(Data((0..<16).map { _ in UInt8(truncatingIfNeeded: generator.next()) }))
        case 6: .array([.string(token(6, &generator)), .string(token(6, &generator))])
        default: .dictionary(["user": .string(token(8, &generator)), "n": .integer(Int(generator.next() % 100))])
        }
    }

    /// A random ASCII token of `length` characters.
    static func token(_ length: Int, _ generator: inout SplitMix64) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        return String(
            decoding: (0..<length).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] },
            as: UTF8.self)
    }

    /// `length` random bytes.
    static func bytes(_ length: Int, seed: UInt64) -> Data {
        var generator = SplitMix64(seed: seed)
        var data = Data(count: length)
        data.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < length {
                var word = generator.next()
                let chunk = min(8, length - offset)
                withUnsafeBytes(of: &word) {
                    raw.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: chunk)
                }
                offset += chunk
            }
        }
        return data
    }

    /// Two values of the same encoded size for the key a mutation scenario changes, so that
    /// every sample writes a blob of the same length and never the same bytes twice in a row.
    static func alternatingValues(_ sample: Int) -> PropertyListValue {
        .string(sample % 2 == 0 ? "mutated-value-AAAAAAAA" : "mutated-value-BBBBBBBB")
    }

    static let mutatedKey = "com.example.mutated"

    /// The encoded bytes, exactly as SecureDictionary stores them.
    static func blob(_ entries: [String: PropertyListValue]) throws -> [UInt8] {
        Array(try BinaryPropertyListCoding.encode(entries))
    }
}
