import ArgumentParser
import FoundationEssentials
import SecureDictionary

extension SecureDict {
    struct Delete: ReportingCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Remove one key, or a whole dictionary.",
            discussion: """
                With KEY, removes that key (exit 1 if there is none). Without KEY, removes the \
                whole dictionary's keyring item: on a terminal you are asked to confirm; \
                otherwise (scripts, pipes) --force is required. Deleting the item is also the \
                way to get rid of one that cannot be read (corrupt or unknown format). The tool \
                prints nothing on success.

                Examples:
                  secure-dict delete --app com.example.app --name settings theme
                  secure-dict delete --app com.example.app --name settings
                  secure-dict delete --app com.example.app --name settings --force
                """)

        @Argument(help: ArgumentHelp("The key to remove. Without it, the whole dictionary.", valueName: "KEY"))
        var key: String?

        @OptionGroup var dictionary: DictionaryOptions

        @Flag(help: "Remove the whole dictionary without asking (required when standard input is not a terminal).")
        var force = false

        @OptionGroup var global: GlobalOptions

        func validate() throws {
            if key == nil, !force, !Terminal.standardInputIsTerminal {
                throw ValidationError(
                    "deleting a whole dictionary needs --force when standard input is not a terminal (nobody can confirm)")
            }
        }

        func perform() throws {
            let location = dictionary.location(global)
            if let key {
                try removeKey(key, at: location)
            } else {
                try removeItem(at: location)
            }
        }

        /// One write that removes `key`, or none when it is absent.
        private func removeKey(_ key: String, at location: DictionaryLocation) throws {
            let opened = try location.openExisting(key: key)
            struct NoSuchKey: Error {}
            do {
                // Throwing from the closure writes nothing: an absent key costs no keyring write.
                try opened.update { entries in
                    if entries.removeValue(forKey: key) == nil { throw NoSuchKey() }
                }
            } catch is NoSuchKey {
                throw location.noSuchKey(key)
            }
        }

        private func removeItem(at location: DictionaryLocation) throws {
            let names = try location.existingNames()
            guard names.contains(location.name ?? "") else { throw location.notFound(among: names) }
            if !force, !Terminal.confirm("Delete \(location.description) from the keyring?") {
                printNote("Nothing was deleted.")  // like `rm -i`: declining is not an error
                return
            }
            let existed: Bool
            do {
                existed = try SecureDictionary.delete(
                    name: location.name, applicationID: location.applicationID, options: location.options)
            } catch {
                throw CommandFailure.keyring(error)
            }
            if !existed { throw location.notFound(among: names.filter { $0 != (location.name ?? "") }) }
        }
    }
}
