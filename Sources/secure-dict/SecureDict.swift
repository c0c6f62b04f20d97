import ArgumentParser

@main
struct SecureDict: ParsableCommand {
    /// What `secure-dict --version` prints: the package's version, the CHANGELOG's latest
    /// version heading (a test holds them equal).
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "secure-dict",
        abstract: "Read and edit the SecureDictionary dictionaries kept in your keyring.",
        discussion: """
            An application that uses SecureDictionary keeps each of its dictionaries as one \
            item of your keyring (the Secret Service: gnome-keyring, KWallet, KeePassXC…). \
            A dictionary belongs to an application ID (--app, or $SECURE_DICT_APP) and has \
            a name (--name), or none for the application's default dictionary. Values are \
            typed: string, integer, real, bool, date, data, array, dictionary.

            Examples:
              secure-dict list
              secure-dict write --app com.example.app --name settings theme dark
              secure-dict write --app com.example.app --name settings retries 3 --type int
              printf %s "$TOKEN" | secure-dict write --app com.example.app apiToken -
              secure-dict read --app com.example.app --name settings
              secure-dict read --app com.example.app apiToken
              secure-dict exec --app com.example.app --env TOKEN=apiToken -- ./deploy.sh
              secure-dict export --app com.example.app -o backup.json
              secure-dict import --app com.example.app backup.json --replace
              secure-dict delete --app com.example.app --name settings theme
              secure-dict doctor

            \(TypedJSON.helpSummary)

            Secrets: only 'read' and 'export' print values; 'exec' puts them into a \
            command's environment without showing them ('read --keys' lists the keys alone). \
            Give secret values to 'write' as '-' (standard input) so they stay out of the \
            process list and shell history. Errors never show a key's value.

            Exit codes:
              0   success
              1   no such key, or no such dictionary; for 'adopt' and
                  'export-items', conflicts or refused keys left something
                  undone, or no item matched
              3   the keyring failed: locked, unavailable, timed out, unreadable item…
                  (one line on standard error says why and what to do); for
                  'doctor', a problem was found
              4   a file or standard input could not be read or written, holds no
                  valid dictionary, or holds more than a dictionary can store
                  (--maximum-size), 'adopt''s items and a stored dictionary
                  read or written included
              64  usage error: a missing or invalid argument or option
            'exec' exits with its command's code once the command runs (see
            'secure-dict help exec').
            """,
        version: version,
        subcommands: [
            List.self, Read.self, Write.self, Delete.self, Exec.self, Export.self, Import.self, Adopt.self, ExportItems.self,
            Doctor.self, Move.self, Keyring.self,
        ]
    )
}
