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
