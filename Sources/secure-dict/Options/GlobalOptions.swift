import ArgumentParser
import FoundationEssentials
import Logging
import SecureDictionary

/// The environment variable that `--app` falls back to.
let applicationEnvironmentVariable = "SECURE_DICT_APP"

/// Where the keyring is and how long to wait for it: every subcommand takes these.
struct KeyringOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The keyring collection, by alias: 'default' (your login keyring) or 'session' (kept in memory until the keyring daemon stops).",
            valueName: "ALIAS"))
    var collection = "default"

    @Option(help: ArgumentHelp("How long to wait for each keyring call before failing.", valueName: "SECONDS"))
    var timeout: Double = 3

    @Option(
        name: .customLong("maximum-size"),
        help: ArgumentHelp(
            "The largest dictionary to read or write, in bytes (the library's Options.maximumSize). Default: 4194304 (4 MiB).",
            valueName: "BYTES"))
    var maximumSize: Int?

    /// `--store` and the encrypted files' options (StoreOptions.swift).
    @OptionGroup var storage: StoreOptions

    func validate() throws {
        guard timeout.isFinite, timeout > 0, timeout <= 3600 else {
            throw ValidationError("--timeout must be a number of seconds above 0 and at most 3600")
        }
        if let maximumSize, maximumSize <= 0 {
            throw ValidationError("--maximum-size must be a number of bytes above 0")
        }
        do {
            _ = try KeyringItem(dictionaryName: nil, applicationID: "probe", collection: KeyringCollection(alias: collection))
        } catch {
            throw ValidationError("invalid --collection: \(error)")
        }
    }

    /// `--timeout` as a `Duration`.
    var duration: Duration { .milliseconds(Int((timeout * 1000).rounded(.up))) }

    /// The library's options: this collection and timeout, the unlock dialog only when
    /// `unlock` allows it, and no log output (the tool reports every failure itself, as one line).
    func options(unlock: Bool) -> SecureDictionary.Options {
        SecureDictionary.Options(
            collection: KeyringCollection(alias: collection),
            timeout: duration,
            unlock: unlock ? .prompt(timeout: .seconds(60)) : .never,
            maximumSize: maximumSize ?? SecureDictionary.Options.defaultMaximumSize,
            store: storage.makeStore(),
            logger: Logger(label: "secure-dict", factory: { _ in SwiftLogNoOpLogHandler() }))
    }
}

/// ``KeyringOptions`` and `--unlock`: the subcommands that read or write dictionaries take
/// these (`doctor` shows no dialog, so it takes ``KeyringOptions`` alone).
struct GlobalOptions: ParsableArguments {
    @OptionGroup var keyring: KeyringOptions

    @Flag(
        help: ArgumentHelp(
            "When the keyring is locked, show its unlock dialog and wait up to 60 seconds for you (default: fail at once)."))
    var unlock = false

    var options: SecureDictionary.Options { keyring.options(unlock: unlock) }
}

/// `--app` and `--name`: which dictionary a command works on.
struct DictionaryOptions: ParsableArguments {
    @Option(
        name: .customLong("app"),
        help: ArgumentHelp(
            "The application ID that owns the dictionary, e.g. com.example.app. Default: $\(applicationEnvironmentVariable).",
            valueName: "ID"))
    var app: String?

    @Option(
        name: [.customShort("n"), .customLong("name")],
        help: ArgumentHelp(
            "The dictionary's name. Without it (or with an empty NAME), the application's default, unnamed dictionary.",
            valueName: "NAME"))
    var name: String?

    /// `--app`, or else `$SECURE_DICT_APP`.
    var applicationID: String? {
        app ?? ProcessInfo.processInfo.environment[applicationEnvironmentVariable].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The dictionary name for the library: `nil` for the default dictionary.
    var dictionaryName: String? { name.flatMap { $0.isEmpty ? nil : $0 } }

    func validate() throws {
        guard let applicationID else {
            throw ValidationError("Missing '--app <ID>' (or set \(applicationEnvironmentVariable))")
        }
        do {
            _ = try KeyringItem(dictionaryName: dictionaryName, applicationID: applicationID)
        } catch {
            throw ValidationError("\(error)")
        }
    }

    func location(_ global: GlobalOptions) -> DictionaryLocation {
        DictionaryLocation(applicationID: applicationID!, name: dictionaryName, options: global.options)
    }
}
