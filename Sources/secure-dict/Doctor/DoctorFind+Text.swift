import FoundationEssentials

/// `doctor --find`'s report for a person, and the commands that keep one copy of a split.
extension DoctorFind {
    var text: String {
        var lines: [String] = []
        if let owner {
            let name = providerName.map { "\($0): " } ?? ""
            lines.append(
                "Secret Service: \(name)\(owner.executable ?? owner.command ?? "?") (pid \(owner.pid)) owns org.freedesktop.secrets"
            )
        } else {
            lines.append("Secret Service: nobody owns org.freedesktop.secrets now")
            if let activatable {
                lines.append(
                    activatable
                        ? "  this session bus can start a provider for it (D-Bus activation): the next keyring call does"
                        : "  this session bus cannot start one (org.freedesktop.secrets is not among its activatable names)")
            }
        }
        if let keyringProblem { lines.append("  not searched: \(keyringProblem)") }
        for provider in installed where provider.executable != owner?.executable || owner == nil {
            var facts = [provider.executable ?? "no executable on PATH"]
            facts.append(provider.activationFile.map { "D-Bus service file \($0)" } ?? "no D-Bus service file")
            if let folder = provider.dataFolder {
                facts.append("its items in \(folder)" + (provider.dataModified.map { ", changed \(Self.time($0))" } ?? ""))
            }
            lines.append("  also installed, not running: \(provider.name): " + facts.joined(separator: "; "))
            lines.append("    its copies cannot be listed while it does not own the bus name: start it to search it")
        }
        if !collections.isEmpty { lines.append("Collections:") }
        for collection in collections {
            let aliases = collection.aliases.isEmpty ? "no alias" : "alias " + collection.aliases.joined(separator: ", ")
            var line = "  \"\(collection.label)\" \(collection.path) (\(aliases)), \(collection.locked ? "locked" : "unlocked")"
            if collection.unreadableItems > 0 {
                line += ": \(collection.unreadableItems) item(s) of \(application) not read"
                line += collection.locked ? " (doctor --find --unlock unlocks it)" : " (the provider asks its user first)"
            } else if collection.locked {
                // gnome-keyring finds nothing in a locked collection that has a password.
                line += ": its items are not listed while it is locked (doctor --find --unlock unlocks it)"
            }
            lines.append(line)
        }
        lines.append("Folders:")
        for folder in folders {
            var line = "  \(folder.path): \(folder.reason)"
            if let problem = folder.problem {
                line += "; cannot be searched: \(problem)"
            } else if !folder.exists {
                line += "; no such folder"
            }
            if let choice = folder.automaticChoice { line += "; --store auto recorded '\(choice)' here" }
            lines.append(line)
        }
        let byName = Dictionary(grouping: copies, by: \.name)
        if byName.isEmpty { lines.append("No copy of a dictionary of \(application) was found.") }
        for name in byName.keys.sorted() {
            let copies = byName[name]!
            lines.append("\(name.isEmpty ? "The default dictionary" : "Dictionary '\(name)'") of \(application):")
            for (index, copy) in copies.enumerated() {
                var facts = [copy.place]
                if let modified = copy.modified { facts.append("modified \(Self.time(modified))") }
                if let generation = copy.generation { facts.append("generation \(generation)") }
                if let size = copy.size { facts.append("\(size) bytes") }
                if let keys = copy.keys { facts.append("\(keys) key\(keys == 1 ? "" : "s"), decodes") }
                if let problem = copy.problem { facts.append("not read: \(problem)") }
                lines.append("  \(index + 1). " + facts.joined(separator: ", "))
            }
            if copies.count > 1 { lines += keepOne(name, copies) }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Which copy is newer, and for each copy the commands that keep it alone (printed, never run).
    private func keepOne(_ name: String, _ copies: [Copy]) -> [String] {
        var lines = ["  In \(copies.count) places. Nothing was changed."]
        if let newest = copies.first, newest.modified != nil,
            copies.dropFirst().allSatisfy({ ($0.modified ?? .distantPast) < newest.modified! })
        {
            lines.append("  The newest is 1.")
        }
        let base = "secure-dict delete --app \(shellQuoted(application))" + (name.isEmpty ? "" : " --name \(shellQuoted(name))")
        for (index, keep) in copies.enumerated() {
            lines.append("  To keep \(index + 1) only:")
            for (other, drop) in copies.enumerated() where other != index {
                guard let options = address(drop) else {
                    lines.append(
                        "    (\(other + 1) is in a collection without an alias: the tool cannot name it; "
                            + "make it the default collection in your keyring manager first)")
                    continue
                }
                lines.append("    \(base)\(options) --force")
            }
            if keep.kind == "keyring", keep.collectionAlias != "default" {
                lines.append("    then make its collection the default in your keyring manager: the application reads 'default'")
            }
            // A file copy kept where the application reads the keyring: moved there after the others
            // went. The file's header does not say its key source; one that decoded under the systemd
            // credential at hand is the credential's, and for any other the user names the store.
            if keep.kind == "file", let folder = keep.folder, copies.contains(where: { $0.kind == "keyring" }) {
                let from = keep.keys != nil ? "credential" : "STORE"
                lines.append(
                    "    then, for the keyring: secure-dict move --app \(shellQuoted(application))"
                        + (name.isEmpty ? "" : " --name \(shellQuoted(name))")
                        + " --from \(from) --from-folder \(shellQuoted(folder)) --to keyring")
                if keep.keys == nil {
                    lines.append(
                        "      STORE: the store that wrote it, passphrase or credential (a Flatpak's portal"
                            + " files: run the move inside the app's sandbox with --from portal)")
                }
            }
        }
        return lines
    }

    /// The options that name `copy`'s store on the command line; `nil` for a collection without an alias.
    private func address(_ copy: Copy) -> String? {
        if copy.kind == "file", let folder = copy.folder { return " --store credential --folder \(shellQuoted(folder))" }
        guard let alias = copy.collectionAlias else { return nil }
        return alias == "default" ? " --store keyring" : " --store keyring --collection \(shellQuoted(alias))"
    }

    static func time(_ date: Date) -> String { date.formatted(.iso8601) }
}
