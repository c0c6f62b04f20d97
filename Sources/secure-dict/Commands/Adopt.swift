import ArgumentParser
import FoundationEssentials
import SecureDictionary
import SecureDictionaryAdoption

extension SecureDict {
    struct Adopt: ReportingCommand {
        static let configuration = CommandConfiguration(
            commandName: "adopt",
            abstract: "Move per-key secrets of another library or tool into one dictionary.",
            discussion: """
                Reads the keyring items another library keeps, one per key (python keyring, \
                keytar and Electron apps, go-keyring, QtKeychain, or any items --match finds), \
                writes them into the dictionary, reads the dictionary back, and only then, with \
                --retire delete, removes each item, one by one, each only while it still holds \
                the secret adopted. Interrupted at any point, nothing is lost: run it again to \
                finish. A secret becomes a string when it is UTF-8, data otherwise.

                A key the dictionary already holds with another value, two items with one key \
                (also two keys that are one text in two Unicode forms, NFC and NFD: a \
                dictionary holds one of them), or an item without the key attribute is a \
                conflict: nothing changes at all (exit 1) unless --on-conflict says otherwise. \
                No item found is exit 1 too, naming the services that library's items have, \
                and creates no dictionary (into a dictionary that exists, it is a note: a run \
                before may have finished the job). The dictionary is in the keyring, beside the items \
                (--store keyring, or auto where the keyring answers); more than --maximum-size \
                is exit 4. Items the keyring asks you about \
                (KeePassXC's access confirmation) are listed and left alone. The way back is \
                'export-items'.

                Examples:
                  secure-dict adopt --app com.example.app --name tokens \\
                      --from python-keyring --service my-app --dry-run
                  secure-dict adopt --app com.example.app --name tokens \\
                      --from python-keyring --service my-app --retire delete
                  secure-dict adopt --app com.example.app --match application=my-tool \\
                      --key-attribute account --json
                """)

        @OptionGroup var dictionary: DictionaryOptions
        @OptionGroup var source: ForeignItemOptions

        @Flag(help: "Only say what would be written and retired.")
        var dryRun = false

        @Option(help: ArgumentHelp("What to do with the items once adopted: keep (default) or delete.", valueName: "POLICY"))
        var retire: Retire = .keep

        @Option(
            help: ArgumentHelp(
                "What a conflict means: stop (change nothing; the default), keep-dictionary, take-item.", valueName: "POLICY"))
        var onConflict: OnConflict = .stop

        @Flag(
            help:
                "Print the report as JSON: {\"dryRun\", \"changedNothing\", \"items\": [{\"key\", \"outcome\", \"reason\", \"retirement\"}]}."
        )
        var json = false

        @OptionGroup var global: GlobalOptions

        enum Retire: String, ExpressibleByArgument { case keep, delete }
        enum OnConflict: String, ExpressibleByArgument {
            case stop
            case keepDictionary = "keep-dictionary"
            case takeItem = "take-item"
        }

        func perform() throws {
            let location = dictionary.location(global)
            let options = try source.inKeyring(location.options, command: "adopt")
            let report: AdoptionReport
            do {
                report = try SecureDictionary.adopt(
                    source.items, into: location.name, applicationID: location.applicationID, options: options,
                    conflicts: onConflict == .stop ? .stop : onConflict == .keepDictionary ? .keepDictionary : .takeItem,
                    retire: retire == .delete ? .delete : .keep, dryRun: dryRun)
            } catch .tooLarge(let size, let limit) {
                // More than a dictionary can store: exit 4, as for `write` and `import`.
                throw CommandFailure.inputOutput(
                    "with these items, \(location.description) would take \(size) bytes, more than the limit of \(limit): "
                        + "adopt fewer (--match), or raise the limit with --maximum-size BYTES; nothing was written")
            } catch {
                throw CommandFailure.keyring(error, hint: nil)
            }
            if report.items.isEmpty {
                // Nothing matched. Into a dictionary that exists, this is how a run that
                // finishes an interrupted one (or the loser of two runs) finds the job done.
                guard try location.existingNames().contains(location.name ?? "") else {
                    throw CommandFailure.notFound(source.nothingMatched(options) + "; nothing was written")
                }
                printNote("Nothing to adopt: \(source.nothingMatched(options)); a run before may have adopted and retired them.")
            }
            try Terminal.write(Data((json ? try AdoptionOutput.json(report) : AdoptionOutput.text(report)).utf8))
            if report.changedNothing { throw ExitStatus.notFound }
        }
    }
}

/// How `adopt` prints its report. Keys come from attributes (not secret); values never print.
///
/// When conflicts stopped the adoption (`--on-conflict stop`), nothing was written, so an item
/// the library reports as adoptable is `not-adopted` here, and the summary says what happened
/// instead of counting it as adopted.
enum AdoptionOutput {
    static func text(_ report: AdoptionReport) -> String {
        let lines = report.items.map { item in
            let key = item.key.map(VisibleText.escaped) ?? "(no key)"
            let retired = item.retirement == .kept ? "" : " (\(retirement(item.retirement)))"
            let (name, reason) = outcome(item.outcome, in: report)
            return "\(name.padded(to: 20))\(key)\(reason.map { ": \($0)" } ?? "")\(retired)"
        }
        return (lines + [summary(report)]).joined(separator: "\n") + "\n"
    }

    /// The last line: the library's counts, or what a stop did.
    static func summary(_ report: AdoptionReport) -> String {
        guard report.changedNothing else { return report.description + "." }
        let conflicts = report.conflicts.count
        return """
            \(conflicts) conflict\(conflicts == 1 ? "" : "s") stopped the adoption (--on-conflict stop): nothing changed, \
            none of the \(report.items.count) item(s) was adopted or retired. Resolve the conflicts, or run again with \
            --on-conflict keep-dictionary (keep the dictionary's values) or --on-conflict take-item (take the items').
            """
    }

    static func json(_ report: AdoptionReport) throws -> String {
        struct Row: Encodable {
            let key: String?
            let outcome: String
            let reason: String?
            let retirement: String
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(key, forKey: .key)  // null when the item has none
                try container.encode(outcome, forKey: .outcome)
                try container.encode(reason, forKey: .reason)
                try container.encode(retirement, forKey: .retirement)
            }
            enum CodingKeys: String, CodingKey { case key, outcome, reason, retirement }
        }
        struct Whole: Encodable {
            let dryRun: Bool
            let changedNothing: Bool
            let items: [Row]
        }
        let rows = report.items.map { item in
            let (name, reason) = outcome(item.outcome, in: report)
            return Row(key: item.key, outcome: name, reason: reason, retirement: retirement(item.retirement))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let text = String(
            decoding: try encoder.encode(Whole(dryRun: report.dryRun, changedNothing: report.changedNothing, items: rows)),
            as: UTF8.self)
        return VisibleText.escapingJSON(text) + "\n"
    }

    private static func outcome(_ outcome: AdoptionReport.Outcome, in report: AdoptionReport) -> (
        name: String, reason: String?
    ) {
        switch outcome {
        case .adopted where report.changedNothing: ("not-adopted", "the conflicts stopped the adoption (--on-conflict stop)")
        case .adopted: ("adopted", nil)
        case .alreadyAdopted: ("already-adopted", nil)
        case .conflict(let reason): ("conflict", reason)
        case .needsConfirmation: ("needs-confirmation", "the keyring asks its user before this tool may read it")
        }
    }

    private static func retirement(_ retirement: AdoptionReport.Retirement) -> String {
        switch retirement {
        case .kept: "kept"
        case .deleted: "deleted"
        case .changedSinceAdopted: "changed-since-adopted"
        case .alreadyGone: "already-gone"
        }
    }
}
