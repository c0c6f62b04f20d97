import ArgumentParser
import FoundationEssentials
import SecureDictionary

extension SecureDict {
    /// A thin command over `SecureDictionary.move(name:applicationID:collection:from:to:timeout:)`.
    struct Move: ReportingCommand {
        static let configuration = CommandConfiguration(
            commandName: "move",
            abstract: "Move one dictionary from one store to another, verified.",
            discussion: """
                Copies the dictionary to --to, reads the copy back and compares it byte for \
                byte, then removes it from --from. A destination that already holds the \
                dictionary with other content is refused (exit 1, nothing changed): remove the \
                copy you do not want first (secure-dict delete … --force). Stores: keyring (the \
                Secret Service, in --collection), credential or passphrase (encrypted files in \
                --from-folder or --to-folder, default as for --folder), portal (a sandboxed \
                app's files). Prints nothing on success; exit 1 when --from has no such \
                dictionary. `secure-dict doctor --find` prints these commands for a dictionary \
                it finds in two places.

                Examples:
                  secure-dict move --app com.example.app --name tokens --from credential --to keyring
                  secure-dict move --app com.example.app --from keyring --to passphrase --to-folder /srv/secrets
                """)

        @OptionGroup var dictionary: DictionaryOptions

        @Option(help: ArgumentHelp("The store that holds it now: keyring, credential, passphrase or portal.", valueName: "STORE"))
        var from: StoreOptions.Kind

        @Option(help: ArgumentHelp("The store to move it to: keyring, credential, passphrase or portal.", valueName: "STORE"))
        var to: StoreOptions.Kind

        @Option(
            name: .customLong("from-folder"),
            help: ArgumentHelp("The folder of --from's encrypted files.", valueName: "DIR"))
        var fromFolder: String?

        @Option(name: .customLong("to-folder"), help: ArgumentHelp("The folder of --to's encrypted files.", valueName: "DIR"))
        var toFolder: String?

        @OptionGroup var global: GlobalOptions

        func validate() throws {
            for kind in [from, to] where kind == .auto {
                throw ValidationError("move takes a store, not 'auto': name where the dictionary is and where it goes")
            }
            for folder in [fromFolder, toFolder].compactMap({ $0 }) where !folder.hasPrefix("/") {
                throw ValidationError("--from-folder and --to-folder must be absolute paths")
            }
        }

        /// The store of `kind` in `folder`, with this command's credential and passphrase options.
        private func store(_ kind: StoreOptions.Kind, folder: String?) throws -> any KeyringStore {
            var arguments = ["--store", kind.rawValue, "--credential", global.keyring.storage.credential]
            if let folder { arguments += ["--folder", folder] }
            if let descriptor = global.keyring.storage.passphraseFD { arguments += ["--passphrase-fd", String(descriptor)] }
            return try StoreOptions.parse(arguments).makeStore()
        }

        func perform() throws {
            let options = global.options
            let moved: Bool
            do {
                moved = try SecureDictionary.move(
                    name: dictionary.dictionaryName, applicationID: dictionary.applicationID!, collection: options.collection,
                    from: try store(from, folder: fromFolder), to: try store(to, folder: toFolder),
                    timeout: max(options.timeout, .seconds(10)))
            } catch let error as SecureDictionaryError {
                throw CommandFailure.keyring(error)
            }
            if !moved {
                throw CommandFailure.notFound("\(from.rawValue) holds no such dictionary: nothing was moved")
            }
        }
    }
}
