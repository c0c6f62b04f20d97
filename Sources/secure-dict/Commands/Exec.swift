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
                descriptors it was given (4<FILE) and the signal handling it was started with. \
                Its exit code and any signal sent to it are COMMAND's own, by construction. \
                The tool's own secret sources are not COMMAND's: the --passphrase-fd \
                descriptor is closed (a standard stream is reopened on /dev/null), and what the \
                tool opened itself (keyring connections, lock files, credentials) closes on exec.

                Nothing is checked after COMMAND starts, and nothing is run when a check fails: \
                a missing key (named, with its variable), a value without environment text, a \
                variable that two sources would set, a key outside --all-with-prefix's \
                namespace, a variable longer than the kernel allows one (131072 bytes with \
                'NAME=' and the final NUL) or all of them together more than it allows in all \
                (a quarter of 'ulimit -s', at most 6 MiB), or a dictionary that does not exist \
                stops here, never leaving a variable empty.

                Values as text, the same text as 'read KEY' prints: a string as it is; an \
                integer, a real or a bool as their text (42, 0.25, true); a date in ISO 8601, \
                UTC (2026-11-22T03:57:00.000Z). Data is refused, unless --data-as-base64 asks \
                for it as base64. Arrays, dictionaries and a string holding NUL are refused.

                --all-with-prefix P gives every key of the dictionary the variable P followed \
                by the key in upper case, each character other than a letter, digit or '_' \
                as '_' (with APP_: db-password is APP_DB_PASSWORD, apiToken is APP_APITOKEN). \
                Every such variable starts with P and '_' (P's own '_' when it ends in one), the \
                namespace you named: a key whose variable would not (PATH from the prefix P and \
                the key ATH, PGUSER from PG and user) is refused, so that whoever can write the \
                dictionary never chooses a variable such as PATH or LD_PRELOAD; name such \
                variables one by one with --env. Keys that would share a variable (a-b and \
                a_b), or a key's variable that --env also sets, are refused.

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
                keyring failed, 4 the dictionary is larger than --maximum-size, 64 usage (also \
                a value without environment text or too long for one, a variable set twice, a \
                key outside the prefix's namespace), 126 COMMAND cannot be run, 127 COMMAND not \
                found.

                Examples:
                  secure-dict exec --app com.example.app --env API_TOKEN=apiToken \\
                      -- ./deploy.sh
                  secure-dict exec --app com.example.app --name db \\
                      --all-with-prefix DB_ -- ./migrate.sh   (user: DB_USER, host: DB_HOST…)
                  secure-dict exec --app com.example.app --name db \\
                      --env PGUSER=user --env PGPASSWORD=password -- psql
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
                "Give COMMAND every key of the dictionary, as the variable P + the key in upper case ('-', '.' and other characters as '_'); each must start with P and '_' (APP_DB_HOST with APP_).",
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
                try ExecVariables.checkSize(of: variable, text, key: source.key, location: location)
                assignments.append((variable, text))
            }
            try ExecVariables.checkTotal(replacement.argumentBytes(for: command, adding: assignments))
            // The passphrase's descriptor is the tool's, not COMMAND's: it opens every dictionary.
            let secrets = global.keyring.storage.passphraseFD.map { [$0] } ?? []
            let failure = replacement.replace(with: command, adding: assignments, closing: secrets)
            printError(failure.message)
            throw ExitCode(failure.status)
        }
    }
}
