import ArgumentParser
import SecureDictionary

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

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
                killed) stops everything that carries that XDG_RUNTIME_DIR (the bus, the keyring, \
                what COMMAND left running) and removes the session's files. Needs no desktop, \
                DISPLAY, systemd or privileges: it works in a plain container, as root or not. \
                Nothing of your own session is used or changed.

                With --keep DIR the keyring's files (and XDG_DATA_HOME) live in DIR, so that what \
                one run stores the next finds; DIR then also holds the keyring's password, so keep \
                it as private as its content. One run at a time per DIR.

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
                "Keep the keyring's files in DIR (created if needed) instead of a throw-away folder.", valueName: "DIR"))
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
            guard provider == "gnome-keyring" else {
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

    /// Stops a session whose `keyring run` died without stopping it (even by SIGKILL): reads
    /// standard input, a pipe only that process writes to, until its end, then stops every
    /// process that carries the session's XDG_RUNTIME_DIR and removes the session's folder.
    struct Watchdog: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "watchdog", shouldDisplay: false)

        @Option var runtime: String
        @Option var remove: String

        func run() throws {
            var byte: UInt8 = 0
            while true {
                let got = Glibc.read(STDIN_FILENO, &byte, 1)
                if got == 0 || (got < 0 && errno != EINTR) { break }
            }
            PrivateKeyringSession.stopProcesses(runtime: runtime)
            try? FileManager.default.removeItem(atPath: remove)
        }
    }
}
