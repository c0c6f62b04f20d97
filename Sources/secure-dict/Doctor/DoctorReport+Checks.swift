import FoundationEssentials
import ProcessSpawning
import SecureDictionary

/// The checks of `secure-dict doctor` past the collection: the provider's own notes, the
/// items, and the scratch round trip.
extension DoctorReport {
    func providerFindings(_ diagnosis: SecretServiceDiagnosis) -> [DoctorFinding] {
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
        let tool = ProviderTraits.named(diagnosis.providerName).tool
        if let sessionFix = tool.sessionFix {
            let running = provider?.version?.split(separator: " ").last.map(String.init)
            if running.map({ ProviderProcess.version($0, isBefore: sessionFix.version) }) ?? true {
                findings.append(
                    DoctorFinding(check: "provider", status: .note, detail: sessionFix.detail, fix: sessionFix.fix))
            }
        }
        if let note = tool.note { findings.append(DoctorFinding(check: "provider", status: .note, detail: note)) }
        return findings
    }

    /// Duplicates, and the items a provider hides from this process until its user allows
    /// access (reported locked in an unlocked collection, where that means so: KeePassXC).
    func itemFindings(_ options: SecureDictionary.Options, providerName: String?) -> [DoctorFinding] {
        let items: [KeyringItemListing]
        do {
            items = try SecureDictionary.items(options: options)
        } catch {
            return [DoctorFinding(check: "duplicates", status: .problem, detail: "cannot list the items: \(error)")]
        }
        var findings = [duplicatesFinding(items)]
        let hidden = items.filter(\.isLocked).count
        let provider = ProviderTraits.named(providerName)
        if provider.lockedItemsMeanConfirmation, let name = provider.name, hidden > 0 {
            findings.append(
                DoctorFinding(
                    check: "access", status: .problem,
                    detail: "\(name) hides \(hidden) SecureDictionary item(s) from this process until you allow access "
                        + "(\"Confirm when passwords are retrieved by clients\"); SecureDictionary opens no such dialog "
                        + "and reports 'confirmationRequired'",
                    fix: provider.tool.confirmationFix))
        }
        return findings
    }

    func duplicatesFinding(_ items: [KeyringItemListing]) -> DoctorFinding {
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
    mutating func roundTrip(
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
        let milliseconds = elapsed.seconds * 1e3
        roundTripMilliseconds = (milliseconds * 10).rounded() / 10
        return DoctorFinding(
            check: "round trip", status: .ok,
            detail: "4,096 bytes of every value written, read back exactly through a new session and "
                + (keep ? "kept (\(app), '\(name)')" : "removed") + " in \(formatted("%.1f", milliseconds)) ms")
    }
}
