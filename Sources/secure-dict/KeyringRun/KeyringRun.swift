import ArgumentParser
import SecureDictionary

extension SecureDict {
    /// `secure-dict keyring …`: a private keyring for CI and headless work.
    struct Keyring: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keyring",
            abstract: "Run a command against a private, throw-away keyring.",
            subcommands: [Run.self, Watchdog.self])
    }
}

extension SecureDict.Keyring {
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Run COMMAND on a private session bus with an unlocked gnome-keyring, then stop both.",
            discussion: """
                Starts a private D-Bus session bus (no D-Bus activation: nothing else starts on \
                it) and a gnome-keyring whose default collection is unlocked, runs COMMAND with \
                DBUS_SESSION_BUS_ADDRESS, XDG_RUNTIME_DIR and XDG_DATA_HOME pointing at them, and \
                when COMMAND ends (or on Ctrl-C, SIGTERM or SIGHUP, and even when this tool is \
                killed) stops everything of the session (the bus, the keyring, what COMMAND left \
                running, also with another environment) and removes the session's files. Needs no \
                desktop, DISPLAY, systemd or privileges: it works in a plain container, as root or \
                not. Nothing of your own session is used or changed.

                COMMAND finds the keyring's password in the file $SECURE_DICT_KEYRING_PASSWORD_FILE, \
                to lock and unlock the keyring in a test: lock it with 'gdbus call --session --dest \
                org.freedesktop.secrets --object-path /org/freedesktop/secrets --method \
                org.freedesktop.Secret.Service.Lock "['/org/freedesktop/secrets/aliases/default']"', \
                unlock it with 'gnome-keyring-daemon --replace --unlock --components=secrets < \
                "$SECURE_DICT_KEYRING_PASSWORD_FILE"'.

                With --keep DIR the keyring's files (and XDG_DATA_HOME) live in the private \
                subfolder DIR/secure-dict-keyring (DIR itself is made if needed, never changed), \
                so that what one run stores the next finds; it also holds the keyring's password. \
                One run at a time per DIR: a second one says which variable to export to use the \
                running one's keyring from another shell.

                Examples:
                  secure-dict keyring run -- swift test
                  secure-dict keyring run --keep ~/.cache/ci-keyring -- ./integration-tests.sh
                  secure-dict keyring run -- sh -c 'secure-dict write --app ci.example k v && secure-dict read --app ci.example k'

                Exit codes: COMMAND's own (128+N when it died of signal N, or when this tool got \
                signal N); 125 when the private keyring could not be started (one line on \
                standard error says why and what to install); 126 COMMAND cannot be run; \
                127 COMMAND not found.
                """)

        @Option(
            help: ArgumentHelp(
                "Keep the keyring's files in DIR/secure-dict-keyring (DIR is made if needed) instead of a throw-away folder.",
                valueName: "DIR"))
        var keep: String?

        @Option(
            help: ArgumentHelp(
                "The Secret Service provider to start: gnome-keyring (the only one so far).", valueName: "NAME"))
        var provider = "gnome-keyring"

        @Option(
            help: ArgumentHelp("How long to wait for the bus and the keyring to come up.", valueName: "SECONDS"))
        var timeout: Double = 10

        @Argument(
            parsing: .postTerminator,
            help: ArgumentHelp(
                "The command to run, and its arguments: everything from the first word that is not an option of keyring run "
                    + "('--' before it is optional).",
                valueName: "COMMAND"))
        var command: [String] = []

        func validate() throws {
            guard !command.isEmpty else {
                throw ValidationError("Missing COMMAND: secure-dict keyring run [-- ]COMMAND [ARGUMENTS…]")
            }
        }

        func run() throws {
            guard ProviderTraits.named(provider).tool.startsInKeyringRun else {
                printError(
                    "keyring run starts gnome-keyring only so far, not '\(provider)': leave out --provider, or use "
                        + "scripts/with-private-keyring --provider \(provider) from the SecureDictionary repository")
                throw ExitCode(125)
            }
            guard timeout.isFinite, timeout > 0, timeout <= 600 else {
                throw ValidationError("--timeout must be a number of seconds above 0 and at most 600")
            }
            let session: PrivateKeyringSession
            do {
                session = try PrivateKeyringSession.start(keep: keep, timeout: .milliseconds(Int(timeout * 1000)))
            } catch {
                printError(error.message)
                throw ExitCode(125)
            }
            let status = session.run(command)
            throw ExitCode(status)
        }
    }

    /// The session's watchdog (SessionWatchdog.swift): makes its folder, then stops the
    /// session when `keyring run` ends, even by SIGKILL.
    struct Watchdog: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "watchdog", shouldDisplay: false)

        @Option var parent: String
        @Option var runner: Int32

        func run() throws { SessionWatchdog.watch(parent: parent, runner: runner) }
    }
}
