import Foundation
import Logging
import SecureDictionary
import SecureDictionaryTestSupport

/// Scenario 6: values of every size up to the cap round-trip byte-exact; cap + 1 is refused
/// before any keyring call.
enum SizeLimits {
    static let cap = SecureDictionary.Options.defaultMaximumSize

    /// The length of a `.data` value under key "v" whose dictionary encodes to exactly `size` bytes.
    static func dataLength(encodingTo size: Int) -> Int? {
        var length = max(0, size - 64)
        for _ in 0..<8 {
            guard let encoded = try? BinaryPropertyListCoding.encode(["v": .data(Data(count: length))], maximumSize: .max)
            else { return nil }
            if encoded.count == size { return length }
            length += size - encoded.count
        }
        return nil
    }

    static func run(_ harness: Harness, _ report: Report) {
        capPlusOneInMemory(report)
        guard harness.hasKeyring(report, check: "round trips through the real keyring", target: "byte-exact") else { return }
        roundTrips(harness, report)
    }

    static func roundTrips(_ harness: Harness, _ report: Report) {
        let app = harness.appID("size")
        var generator = SplitMix64(seed: 0x51CE)
        let target = "byte-exact value and blob after a fresh load"
        let fixture: FixtureServer
        let item: KeyringItem
        let dictionary: SecureDictionary
        do {
            fixture = try harness.fixture()
            item = try KeyringItem(dictionaryName: "size", applicationID: app)
            dictionary = try SecureDictionary(name: "size", applicationID: app, options: .init(store: SecretServiceStore()))
        } catch {
            report.cannotRun("round trips", target: target, reason: "\(error)")
            return
        }
        var results: [String] = []
        var allExact = true
        for (label, size) in [("0 B", 0), ("1 B", 1), ("4 KiB", 4_096), ("64 KiB", 65_536)] {
            let value = Data(randomBytes(size, using: &generator))
            let exact = roundTrip(["v": .data(value)], through: dictionary, item: item, fixture: fixture)
            results.append("\(label) \(exact ? "exact" : "DIFFERENT")")
            allExact = allExact && exact
        }
        report.add("values of 0 B, 1 B, 4 KiB, 64 KiB", target: target, measured: results.joined(separator: ", "), pass: allExact)

        guard let length = dataLength(encodingTo: cap) else {
            report.add("the whole blob at the cap (\(cap) B)", target: target, measured: "cannot size the blob", pass: false)
            return
        }
        let value = Data(randomBytes(length, using: &generator))
        let start = ContinuousClock.now
        let exact = roundTrip(["v": .data(value)], through: dictionary, item: item, fixture: fixture)
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        let stored = (try? fixture.read(item.attributes).count) ?? -1
        report.add(
            "the whole blob at the cap (\(cap) B)", target: target,
            measured: String(format: "%@, stored %d B (write + 2 reads %.2f s)", exact ? "exact" : "DIFFERENT", stored, seconds),
            pass: exact && stored == cap)

        // Cap + 1 through the real keyring: refused, item untouched.
        do {
            let digest = try fixture.sha256(item.attributes)
            let outcome: String
            do {
                try dictionary.setValue(.data(value + Data([0])), forKey: "v")
                outcome = "written"
            } catch { outcome = caseName(error) }
            let after = try fixture.sha256(item.attributes)
            report.add(
                "cap + 1 through the real keyring", target: "tooLarge, item untouched",
                measured: "\(outcome), item \(after == digest ? "untouched" : "CHANGED")",
                pass: outcome == "tooLarge" && after == digest)
        } catch {
            report.add(
                "cap + 1 through the real keyring", target: "tooLarge, item untouched", measured: "error: \(error)", pass: false)
        }
    }

    /// Writes `entries`, then checks a new instance, the raw stored blob and the cache.
    static func roundTrip(
        _ entries: [String: PropertyListValue], through dictionary: SecureDictionary,
        item: KeyringItem, fixture: FixtureServer
    ) -> Bool {
        do {
            try dictionary.update { $0.dictionary = entries }
            let fresh = try SecureDictionary(
                name: item.dictionaryName, applicationID: item.applicationID,
                options: .init(store: SecretServiceStore()))
            let raw = try fixture.read(item.attributes)
            let expectedBlob = [UInt8](try BinaryPropertyListCoding.encode(entries))
            return fresh.snapshot == entries && raw == expectedBlob && dictionary.snapshot == entries
                && fresh["v"]?.dataValue == entries["v"]?.dataValue
        } catch {
            log("    round trip failed: \(error)")
            return false
        }
    }

    /// Cap + 1 with the in-memory store, whose call log proves that nothing was written (the
    /// one call made is the check of the stored item that precedes every write).
    static func capPlusOneInMemory(_ report: Report) {
        let check = "cap + 1 (\(cap + 1) B encoded)"
        let target = "tooLarge, 0 writes (1 check), cache unchanged"
        guard let length = dataLength(encodingTo: cap + 1) else {
            report.add(check, target: target, measured: "cannot size the blob", pass: false)
            return
        }
        do {
            let store = InMemoryKeyringStore()
            let logger = Logger(label: "size") { _ in SwiftLogNoOpLogHandler() }
            let dictionary = try SecureDictionary(
                name: "size", applicationID: "rel.size",
                options: .init(store: store, logger: logger))
            try dictionary.update { $0 = ["v": .data(Data(count: 10)), "other": "kept"] }
            let before = dictionary.snapshot
            let calls = store.recordedCalls.count
            var outcome = "written"
            do {
                try dictionary.update { entries in
                    entries["v"] = .data(Data(count: length))
                    entries["other"] = nil
                }
            } catch let error as SecureDictionaryError {
                if case .tooLarge(let size, let limit) = error {
                    outcome = "tooLarge(\(size), limit \(limit))"
                } else {
                    outcome = caseName(error)
                }
            }
            let made = Array(store.recordedCalls.dropFirst(calls))
            let writes = made.filter { $0 != "load" }.count
            let unchanged = dictionary.snapshot == before
            report.add(
                check, target: target,
                measured: "\(outcome), \(writes) writes (\(made.count) calls), cache \(unchanged ? "unchanged" : "CHANGED")",
                pass: outcome == "tooLarge(\(cap + 1), limit \(cap))" && writes == 0 && made.count <= 1 && unchanged)
        } catch {
            report.add(check, target: target, measured: "error: \(error)", pass: false)
        }
    }
}
