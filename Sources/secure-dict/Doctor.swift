import ArgumentParser
import SecureDictionary

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension SecureDict {
    struct Doctor: ReportingCommand {
        static let configuration = CommandConfiguration(
            commandName: "doctor",
            abstract: "Check that the keyring works here, and say how to fix what does not.",
            discussion: """
                First names the store this command would use and why (--store; with --store \
                auto, what it chose); for encrypted files, checks their folder and key instead \
                of the keyring below.

                Names the session bus, the keyring provider (the process that owns \
                org.freedesktop.secrets, with its version where it can tell), the encrypted \
                session, the collection behind --collection and whether it is locked, and \
                notes about the environment (SSH without a desktop, a Flatpak or snap \
                sandbox, WSL, root). Lists SecureDictionary items that exist more than once. \
                Then writes 4,096 binary bytes to a scratch dictionary (application \
                io.github.securedictionary.doctor), reads them back through a new session, \
                removes it (on KeePassXC it is kept, since KeePassXC would move it to its \
                Recycle Bin), and times that.

                Each problem comes with the exact fix. Shows no prompt, so it takes no \
                --unlock: for a locked collection it says how to unlock it. Changes nothing \
                but its own scratch dictionary. In --json output, fields that do not apply \
                are left out.

                Exit codes: 0 healthy (notes are fine), 3 at least one problem.

                Examples:
                  secure-dict doctor
                  secure-dict doctor --json
                  secure-dict doctor --collection session
                """)

        @Flag(help: "Print the report as JSON, for scripts.")
        var json = false

        @OptionGroup var keyring: KeyringOptions

        /// Refused with a reason rather than argument-parser's "unknown option": the other
        /// subcommands take it.
        @Flag(help: .hidden) var unlock = false

        func validate() throws {
            if unlock {
                throw ValidationError(
                    """
                    doctor takes no --unlock: it shows no dialog and changes nothing but its scratch dictionary; \
                    it reports whether the collection is locked and how to unlock it (read, write, delete, export \
                    and import take --unlock)
                    """)
            }
        }

        func perform() throws {
            let report = DoctorReport.make(
                environment: .current(), options: keyring.options(unlock: false), storage: keyring.storage)
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                try Terminal.write(try encoder.encode(report) + Data("\n".utf8))
            } else {
                try Terminal.write(report.text)
            }
            if !report.healthy { throw ExitStatus.keyringError }
        }
    }
}

/// Everything `secure-dict doctor` found, in report order.
struct DoctorReport: Encodable {
    /// No finding is a problem (set once every check has run).
    var healthy = false
    var findings: [DoctorFinding] = []
    /// The store this command would use, and why (DoctorStore.swift).
    var store: StoreState?
    var provider: ProviderProcess?
    var providerName: String?
    var sessionAlgorithm: String?
    var collection: CollectionState?
    /// How long the scratch round trip took (write, read back through a new session, remove).
    var roundTripMilliseconds: Double?

    struct CollectionState: Encodable {
        var alias: String
        var path: String?
        var label: String?
        var locked: Bool?
    }

    /// The application ID of the scratch dictionary.
    static let scratchApplicationID = "io.github.securedictionary.doctor"

    /// Runs every check. Keyring checks stop at the first that cannot go on (no service, no
    /// collection, locked); environment notes are always given.
    static func make(environment: DoctorEnvironment, options: SecureDictionary.Options, storage: StoreOptions) -> DoctorReport {
        var report = DoctorReport()
        let environmentFindings = environment.findings()
        if report.checkStore(storage, options: options) {
            let bus = environmentFindings.filter { $0.check == "bus" }
            report.findings += bus
            // No bus is the one cause: the provider's failure would be a second problem.
            if !bus.contains(where: { $0.status == .problem }) {
                report.checkService(environment: environment, options: options)
            }
        }
        report.findings += environmentFindings.filter { $0.check != "bus" }
        report.findings += DoctorMemory.findings()
        report.healthy = !report.findings.contains { $0.status == .problem }
        return report
    }

    private mutating func checkService(environment: DoctorEnvironment, options: SecureDictionary.Options) {
        let alias = options.collection.alias
        let diagnosis: SecretServiceDiagnosis
        do {
            diagnosis = try SecretServiceStore().diagnose(collection: options.collection, timeout: options.timeout)
        } catch {
            // The library's sentence has a fix of its own: the fix line gives the one fix here.
            let detail =
                if case .serviceUnavailable(let reason) = error {
                    "no Secret Service answers on the session bus (\(reason))"
                } else {
                    error.description
                }
            findings.append(
                DoctorFinding(
                    check: "provider", status: .problem, detail: detail, fix: Self.fixForUnreachableService(error, environment)))
            return
        }
        providerName = diagnosis.providerName
        sessionAlgorithm = diagnosis.sessionAlgorithm
        // Inside a sandbox the bus tells the host's pid, which names another process here.
        if environment.sandbox == nil { provider = diagnosis.providerPID.map(ProviderProcess.inspect(pid:)) }
        findings += providerFindings(diagnosis)
        findings.append(
            DoctorFinding(check: "session", status: .ok, detail: "\(diagnosis.sessionAlgorithm) (secrets travel encrypted)"))

        guard let found = diagnosis.collection else {
            collection = CollectionState(alias: alias)
            findings.append(
                DoctorFinding(
                    check: "collection", status: .problem,
                    detail: "the provider has no collection under the alias '\(alias)'",
                    fix: alias == "default"
                        ? (environment.hasDesktop
                            ? "create a keyring (collection) and make it the default in your keyring manager"
                            : "create the login keyring from this shell: gnome-keyring-daemon --replace --unlock "
                                + "--components=secrets (it reads the new keyring's password on standard input)")
                        : "use the default collection (leave out --collection), or create one under '\(alias)' in your keyring manager"
                ))
            return
        }
        collection = CollectionState(alias: alias, path: found.path, label: found.label, locked: found.isLocked)
        let described = "'\(alias)' is \(found.path) (\"\(found.label)\")"
        guard !found.isLocked else {
            findings.append(
                DoctorFinding(
                    check: "collection", status: .problem, detail: "\(described), locked",
                    fix: Self.unlockFix(providerName: diagnosis.providerName, environment: environment)))
            return
        }
        findings.append(DoctorFinding(check: "collection", status: .ok, detail: "\(described), unlocked"))
        findings += itemFindings(options, providerName: diagnosis.providerName)
        findings.append(roundTrip(options, keep: diagnosis.providerName == "KeePassXC", environment: environment))
    }

    // MARK: Checks

    private func providerFindings(_ diagnosis: SecretServiceDiagnosis) -> [DoctorFinding] {
        // The executable's name: `comm` stops at 15 characters ("gnome-keyring-d").
        let name =
            provider?.executable.map { URL(fileURLWithPath: $0).lastPathComponent } ?? provider?.command
            ?? diagnosis.providerName ?? "unknown"
        var facts: [String] = []
        if let pid = provider?.pid { facts.append("pid \(pid)") }
        if let executable = provider?.executable { facts.append(executable) }
        let version = provider?.version.map { " \($0)" } ?? " (version unknown)"
        var findings = [
            DoctorFinding(
                check: "provider", status: .ok,
                detail: "\(name)\(version)" + (facts.isEmpty ? "" : " (\(facts.joined(separator: ", ")))"))
        ]
        switch diagnosis.providerName {
        case "KWallet":
            let frameworks = provider?.version?.split(separator: " ").last.map(String.init)
            if frameworks.map(ProviderProcess.frameworksBeforeSessionFix) ?? true {
                findings.append(
                    DoctorFinding(
                        check: "provider", status: .note,
                        detail: "KWallet before KDE Frameworks 6.25 mishandles about 1 encrypted session in 100; "
                            + "SecureDictionary opens a new session and reads back the first write of each",
                        fix: "update KDE Frameworks to 6.25 or later"))
            }
        case "KeePassXC":
            findings.append(
                DoctorFinding(
                    check: "provider", status: .note,
                    detail: "KeePassXC: the 'default' alias follows the active database tab, and deleted "
                        + "dictionaries go to the database's Recycle Bin when it has one"))
        default:
            break
        }
        return findings
    }

    /// Duplicates, and on KeePassXC the items it hides from this process until its user allows
    /// access (reported locked in an unlocked collection).
    private func itemFindings(_ options: SecureDictionary.Options, providerName: String?) -> [DoctorFinding] {
        let items: [KeyringItemListing]
        do {
            items = try SecureDictionary.items(options: options)
        } catch {
            return [DoctorFinding(check: "duplicates", status: .problem, detail: "cannot list the items: \(error)")]
        }
        var findings = [duplicatesFinding(items)]
        let hidden = items.filter(\.isLocked).count
        if providerName == "KeePassXC", hidden > 0 {
            findings.append(
                DoctorFinding(
                    check: "access", status: .problem,
                    detail: "KeePassXC hides \(hidden) SecureDictionary item(s) from this process until you allow access "
                        + "(\"Confirm when passwords are retrieved by clients\"); SecureDictionary opens no such dialog "
                        + "and reports 'confirmationRequired'",
                    fix: "in KeePassXC, Settings, Secret Service Integration, turn off 'Confirm when passwords are "
                        + "retrieved by clients'"))
        }
        return findings
    }

    private func duplicatesFinding(_ items: [KeyringItemListing]) -> DoctorFinding {
        let counts = Dictionary(grouping: items, by: \.item.name).filter { $0.value.count > 1 }
        guard !counts.isEmpty else {
            return DoctorFinding(
                check: "duplicates", status: .ok, detail: "none among \(items.count) SecureDictionary item(s)")
        }
        let names = counts.keys.sorted()
        let first = counts[names[0]]![0].item
        let remove =
            "secure-dict delete --app \(shellQuoted(first.applicationID))"
            + (first.dictionaryName.isEmpty ? "" : " --name \(shellQuoted(first.dictionaryName))") + " --force"
        return DoctorFinding(
            check: "duplicates", status: .problem,
            detail: "\(names.count) dictionary item(s) exist more than once, and SecureDictionary will not guess "
                + "which is right (error 'ambiguous'): " + names.map { "\($0) (×\(counts[$0]!.count))" }.joined(separator: ", "),
            fix: "see them with: secret-tool search --all service \(shellQuoted(first.name)); keep one and remove the "
                + "others in your keyring manager, or remove them all with: \(remove)")
    }

    /// The scratch dictionary's name: always the same, so an interrupted run leaves at most
    /// one, which the next run overwrites and removes.
    static let scratchName = "scratch"

    /// Writes 4,096 bytes holding every byte value, reads them back through a new session and
    /// a new store (no shared cache), and removes the scratch dictionary; times all of it. On
    /// KeePassXC the dictionary is kept: removing it would move it to the database's Recycle
    /// Bin, one more entry per run (or ask the user to confirm, with its confirmations on).
    private mutating func roundTrip(
        _ options: SecureDictionary.Options, keep: Bool, environment: DoctorEnvironment
    ) -> DoctorFinding {
        var options = options
        let blob = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 167 &+ 13) })
        let (app, name) = (Self.scratchApplicationID, Self.scratchName)
        let started = ContinuousClock.now
        do {
            options.store = SecretServiceStore()
            let writer = try SecureDictionary(name: name, applicationID: app, options: options)
            var removed = keep
            defer { if !removed { _ = try? writer.delete() } }
            try writer.update { $0.dictionary = ["blob": .data(blob)] }  // whatever an interrupted run left
            options.store = SecretServiceStore()
            let reader = try SecureDictionary(name: name, applicationID: app, options: options)
            let readBack = try reader.value(forKey: "blob", as: Data.self)
            guard readBack == blob else {
                return DoctorFinding(
                    check: "round trip", status: .problem,
                    detail: "4,096 bytes written to a scratch dictionary read back differently",
                    fix: "the keyring provider mangles secrets: update or replace it")
            }
            if !keep {
                removed = true
                guard try writer.delete() else {
                    return DoctorFinding(
                        check: "round trip", status: .problem, detail: "the scratch dictionary was gone before it was removed",
                        fix: "another program removes keyring items; find which")
                }
            }
        } catch {
            return DoctorFinding(
                check: "round trip", status: .problem, detail: "scratch dictionary (\(app), '\(name)'): \(error)",
                fix: Self.roundTripFix(error, environment: environment))
        }
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15
        roundTripMilliseconds = (milliseconds * 10).rounded() / 10
        return DoctorFinding(
            check: "round trip", status: .ok,
            detail: "4,096 bytes of every value written, read back exactly through a new session and "
                + (keep ? "kept (\(app), '\(name)')" : "removed") + " in \(formatted("%.1f", milliseconds)) ms")
    }

    // MARK: Fixes

    static func fixForUnreachableService(_ error: SecureDictionaryError, _ environment: DoctorEnvironment) -> String? {
        switch error {
        case .sandboxed(let advice):
            return advice
        case .serviceUnavailable:
            return environment.noKeyringFix
        case .sessionRejected:
            return "try again; if it keeps failing, update the keyring provider"
        case .timedOut:
            return "the provider hangs: restart it (e.g. gnome-keyring-daemon --replace), or allow more time with --timeout"
        default:
            return nil
        }
    }

    /// The fix for a round trip that failed with `error`. The scratch dictionary is the
    /// doctor's own: one it cannot read (another program wrote it) or that exists twice is
    /// removed with one command, after which the next run writes a new one.
    static func roundTripFix(_ error: SecureDictionaryError, environment: DoctorEnvironment) -> String? {
        let remove =
            "secure-dict delete --app \(scratchApplicationID) --name \(scratchName) --force, then run 'secure-dict doctor' again"
        switch error {
        case .corrupt, .unsupportedFormatVersion, .tooLarge:
            return "it holds no dictionary SecureDictionary can read (another program wrote it); remove it with: \(remove)"
        case .ambiguous:
            return "remove every copy with: \(remove)"
        default:
            return fixForUnreachableService(error, environment)
        }
    }

    static func unlockFix(providerName: String?, environment: DoctorEnvironment) -> String {
        switch providerName {
        case "KeePassXC":
            return "unlock the database in KeePassXC's window"
        case "KWallet":
            return "open the wallet in KWalletManager; right after a KDE login KWallet reports locked until some "
                + "application has opened it"
        default:
            if environment.hasDesktop {
                return "unlock the keyring in your keyring manager (GNOME Passwords and Keys), or sign out and in"
            }
            return "unlock gnome-keyring from this shell: gnome-keyring-daemon --replace --unlock --components=secrets "
                + "(it reads the password on standard input)"
        }
    }
}

extension DoctorReport {
    /// The report for a person: one line per finding, its fix below it, and a verdict.
    var text: String {
        var lines: [String] = []
        for finding in findings {
            let status = finding.status == .problem ? "PROBLEM" : finding.status.rawValue
            lines.append(status.padded(to: 9) + "\(finding.check): \(finding.detail)")
            if let fix = finding.fix { lines.append("         fix: \(fix)") }
        }
        let problems = findings.filter { $0.status == .problem }.count
        lines.append("")
        lines.append(problems == 0 ? "Healthy." : "\(problems) problem\(problems == 1 ? "" : "s") found.")
        return lines.joined(separator: "\n") + "\n"
    }
}
