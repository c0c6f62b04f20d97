import ArgumentParser
import FoundationEssentials
import SecureDictionary
import SecureDictionaryAdoption

extension SecureDict {
    struct ExportItems: ReportingCommand {
        static let configuration = CommandConfiguration(
            commandName: "export-items",
            abstract: "Write a dictionary's entries back as per-key items of another library (the way back from 'adopt').",
            discussion: """
                For a release that must be able to go back to an older one: each string and \
                data entry of the dictionary becomes the item that library would have written, \
                read back before it counts. An item that already holds the entry's value is \
                left as it is; one with another value is a conflict and is not touched (exit \
                1). Entries of other types have no per-key form and are skipped; a key \
                holding a NUL character, which no item's attribute can hold, is refused (exit \
                1). The dictionary is not changed.

                Examples:
                  secure-dict export-items --app com.example.app --name tokens \\
                      --to python-keyring --service my-app
                """)

        @OptionGroup var dictionary: DictionaryOptions
        @OptionGroup var target: ForeignItemOptions
        @OptionGroup var global: GlobalOptions

        func perform() throws {
            let location = dictionary.location(global)
            let options = try target.inKeyring(location.options, command: "export-items")
            let report: ItemExportReport
            do {
                report = try SecureDictionary.exportItems(
                    target.items, from: location.name, applicationID: location.applicationID, options: options)
            } catch {
                throw CommandFailure.keyring(error, hint: nil)
            }
            try Terminal.write(Data((report.description + ".\n").utf8))
            if !report.conflicts.isEmpty || !report.refused.isEmpty { throw ExitStatus.notFound }
        }
    }
}
