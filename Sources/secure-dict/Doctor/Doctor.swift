import ArgumentParser
import FoundationEssentials
import SecureDictionary

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

                With --find (and --app, and --name for one dictionary): where did my secrets \
                go? Names the process that owns org.freedesktop.secrets and the other providers \
                installed (executable, D-Bus activation file, data folder), every collection \
                of the running provider (locked ones without unlocking them, unless --unlock), \
                and the encrypted-file folders of this user's configuration (the file store's \
                default, $STATE_DIRECTORY, --folder, the Secret portal's and a Flatpak's \
                ~/.var/app/ID/data), and each copy found: where, when it was modified (a file's \
                generation too), its size, how many keys and whether it decodes (files: under \
                the --credential at hand). Never a key or a value. A provider that is not \
                running cannot be asked: start it to search it. Where a dictionary has several \
                copies it says which is newest and prints the commands that keep one; it never \
                merges, moves or deletes. Exit 0.

                Examples:
                  secure-dict doctor
                  secure-dict doctor --find --app com.example.app --name tokens
                  secure-dict doctor --json
                  secure-dict doctor --collection session
                """)

        @Flag(help: "Print the report as JSON, for scripts.")
        var json = false

        @OptionGroup var keyring: KeyringOptions

        @Flag(help: "List every copy of a dictionary instead of the checks.")
        var find = false

        @Option(name: .customLong("app"), help: ArgumentHelp("With --find: the application ID.", valueName: "ID"))
        var app: String?

        @Option(
            name: .customLong("name"),
            help: ArgumentHelp("With --find: one dictionary ('' for the default one).", valueName: "NAME"))
        var name: String?

        /// With --find: unlock locked collections first (the provider's dialog). Hidden from the
        /// help (the discussion names it): the checks show no dialog, and without --find it is
        /// refused with a reason rather than argument-parser's "unknown option", since the other
        /// subcommands take it.
        @Flag(help: .hidden) var unlock = false

        /// `--app`, or else `$SECURE_DICT_APP`.
        private var applicationID: String? {
            app ?? ProcessInfo.processInfo.environment[applicationEnvironmentVariable].flatMap { $0.isEmpty ? nil : $0 }
        }

        func validate() throws {
            if find {
                guard let applicationID else {
                    throw ValidationError("--find needs '--app <ID>' (or \(applicationEnvironmentVariable))")
                }
                do {
                    _ = try KeyringItem(dictionaryName: name.flatMap { $0.isEmpty ? nil : $0 }, applicationID: applicationID)
                } catch {
                    throw ValidationError("\(error)")
                }
                return
            }
            if app != nil || name != nil { throw ValidationError("--app and --name go with --find") }
            if unlock {
                throw ValidationError(
                    """
                    doctor takes no --unlock: it shows no dialog and changes nothing but its scratch dictionary; \
                    it reports whether the collection is locked and how to unlock it (read, write, delete, export \
                    and import take --unlock, and so does doctor --find)
                    """)
            }
        }

        func perform() throws {
            if find { return try performFind() }
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

extension SecureDict.Doctor {
    /// `--find`: the copies, as text or JSON; exit 0 whatever was found.
    fileprivate func performFind() throws {
        let report = DoctorFind.make(
            applicationID: applicationID!, dictionaryName: name, options: keyring.options(unlock: unlock),
            storage: keyring.storage, unlock: unlock, environment: ProcessInfo.processInfo.environment)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            try Terminal.write(try encoder.encode(report) + Data("\n".utf8))
        } else {
            try Terminal.write(report.text)
        }
    }
}
