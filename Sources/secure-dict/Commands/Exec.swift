import ArgumentParser
import SecureDictionary

extension SecureDict {
    struct Exec: ReportingCommand {
        static let configuration = CommandConfiguration(
            commandName: "exec",
            abstract: "Run COMMAND with values of a dictionary in its environment, never shown.",
            discussion: """
                Reads the keys that --env and --all-with-prefix name, puts their values into \
                COMMAND's environment (besides the variables of this one, replacing any of the \
                same name), and then becomes COMMAND: it replaces this process (execve(2)), so \
                COMMAND has its process ID, its standard input, output and error, the file \
                descriptors it was given (3<FILE) and the signal handling it was started with. \
                Its exit code and any signal sent to it are COMMAND's own, by construction.

                Nothing is checked after COMMAND starts, and nothing is run when a check fails: \
                a missing key (named, with its variable), a value without environment text, a \
                variable that two sources would set, or a dictionary that does not exist stops \
                here, never leaving a variable empty.

                Values as text, the same text as 'read KEY' prints: a string as it is; an \
                integer, a real or a bool as their text (42, 0.25, true); a date in ISO 8601, \
                UTC (2026-11-22T03:57:00.000Z). Data is refused, unless --data-as-base64 asks \
                for it as base64. Arrays, dictionaries and a string holding NUL are refused.

                --all-with-prefix P gives every key of the dictionary the variable P followed \
                by the key in upper case, each character other than a letter, digit or '_' \
                as '_' (with APP_: db-password is APP_DB_PASSWORD, apiToken is APP_APITOKEN). \
                Keys that would share a variable (a-b and a_b), or a key's variable that --env \
                also sets, are refused.

                What it protects against: a value never appears on a command line (this one \
                holds keys, COMMAND's holds what you wrote), so never in the process list or \
                your shell history; never on the terminal, in standard output or error, or in \
                a log; a coding assistant or a script that runs this command sees only what \
                COMMAND itself prints. What it does not protect against: COMMAND and every \
                program it starts can read, print or pass on its environment ('env', a crash \
                report, a debug log); other processes of your user can read COMMAND's \
                environment in /proc/PID/environ, as they can read your keyring; the variables \
                stay in COMMAND's memory until it exits.

                Exit codes: COMMAND's own once it runs (128+N when a shell reports it died of \
                signal N). Before it runs, this tool's: 1 no such dictionary or key, 3 the \
                keyring failed, 64 usage (also a value without environment text, or a variable \
                set twice), 126 COMMAND cannot be run, 127 COMMAND not found.

                Examples:
                  secure-dict exec --app com.example.app --env API_TOKEN=apiToken \\
                      -- ./deploy.sh
                  secure-dict exec --app com.example.app --name db \\
                      --all-with-prefix PG -- psql       (user: PGUSER, host: PGHOST…)
                  secure-dict exec --app com.example.app --env KEY=signingKey \\
                      --data-as-base64 -- sh -c 'printf %s "$KEY" | base64 -d | ./sign'
                  secure-dict read --app com.example.app --keys     (what there is)
                """)

        @OptionGroup var dictionary: DictionaryOptions

        @Option(
            name: .customLong("env"),
            help: ArgumentHelp(
                "Give COMMAND the variable VAR holding the value of KEY (repeat for more variables).",
                valueName: "VAR=KEY"))
        var variables: [String] = []

        @Option(
            name: .customLong("all-with-prefix"),
            help: ArgumentHelp(
                "Give COMMAND every key of the dictionary, as the variable P + the key in upper case ('-', '.' and other characters as '_').",
                valueName: "P"))
        var prefix: String?

        @Flag(
            name: .customLong("data-as-base64"),
            help: "Give data values as base64 text (without it, a key holding data is refused).")
        var dataAsBase64 = false

        @OptionGroup var global: GlobalOptions

        @Argument(
            parsing: .postTerminator,
            help: ArgumentHelp("The command to run and its arguments, after '--'.", valueName: "COMMAND"))
        var command: [String] = []

        func validate() throws {
            _ = try requests
            if let prefix, !ExecVariables.isValidName(prefix) {
                throw ValidationError("--all-with-prefix: \(ExecVariables.invalidName(prefix))")
            }
            guard !variables.isEmpty || prefix != nil else {
                throw ValidationError("Missing '--env VAR=KEY' or '--all-with-prefix P': name what COMMAND gets")
            }
            guard !command.isEmpty else {
                throw ValidationError("Missing '-- COMMAND': secure-dict exec --app ID --env VAR=KEY -- COMMAND [ARGUMENTS…]")
            }
        }

        /// The `--env` options, parsed; the same variable twice is refused.
        private var requests: [ExecVariables.Request] {
            get throws(ValidationError) {
                var requests: [ExecVariables.Request] = []
                for text in variables {
                    let request = try ExecVariables.Request(parsing: text)
                    if requests.contains(where: { $0.variable == request.variable }) {
                        throw ValidationError("--env sets \(request.variable) twice: give each variable once")
                    }
                    requests.append(request)
                }
                return requests
            }
        }

        func perform() throws {
            // Before any library call: what COMMAND is to be started with.
            let replacement = ProcessReplacement.capture()
            let location = dictionary.location(global)
            let opened = try location.openExisting()
            let planned = try ExecVariables.plan(requests: requests, prefix: prefix, keys: prefix == nil ? [] : opened.keys)
            let values = planned.map { opened[$0.source.key] }
            let missing = zip(planned, values).filter { $1 == nil }.map(\.0)
            if !missing.isEmpty {
                let list = missing.map { "\(ExecVariables.quoted($0.source.key)) (for \($0.variable))" }
                throw CommandFailure.notFound(
                    """
                    no key \(list.joined(separator: ", ")) in \(location.description): nothing was run \
                    (see 'secure-dict read \(location.arguments) --keys')
                    """)
            }
            var assignments: [(name: String, value: String)] = []
            for ((variable, source), value) in zip(planned, values) {
                let text = try ExecVariables.text(of: value!, key: source.key, dataAsBase64: dataAsBase64)
                assignments.append((variable, text))
            }
            let failure = replacement.replace(with: command, adding: assignments)
            printError(failure.message)
            throw ExitCode(failure.status)
        }
    }
}
