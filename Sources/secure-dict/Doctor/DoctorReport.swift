import FoundationEssentials
import SecureDictionary

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
                    fix: Self.unlockFix(providerName: diagnosis.providerName, environment: environment, provider: provider)))
            return
        }
        findings.append(DoctorFinding(check: "collection", status: .ok, detail: "\(described), unlocked"))
        findings += itemFindings(options, providerName: diagnosis.providerName)
        findings.append(
            roundTrip(
                options, keep: ProviderTraits.named(diagnosis.providerName).tool.deletesIntoRecycleBin, environment: environment))
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
