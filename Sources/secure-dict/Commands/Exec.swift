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

                --file VAR=KEY puts the value into an anonymous in-memory file (memfd_create(2), \
                on no file system) sealed against writing and resizing, and gives VAR its path, \
                /proc/self/fd/N, for programs that read a secret from a file (PGPASSFILE, \
                --password-file): the value is then in no environment, not shown by 'env', not \
                in /proc/PID/environ, a crash report or the environment of COMMAND's children. \
                The file holds data as its bytes, a string in UTF-8, any other value as its text. \
                COMMAND's children inherit the descriptor, and can read the file, unless COMMAND \
                closes it.

                --clean-env gives COMMAND only the variables set here, and PATH, HOME, USER, \
                LANG and TERM of this command's environment: for a command that must not see \
                the caller's other variables.

                --mask keeps this tool as COMMAND's parent instead: COMMAND's standard output \
                and error pass through it, and each value, as it is, in base64 (standard or \
                URL-safe, with or without padding), hex (either case), percent-encoded or \
                JSON-escaped, becomes <secure-dict:KEY>, even when two writes split it; bytes \
                that could begin a value wait for the next write. Every signal sent to this \
                tool goes on to COMMAND (a terminal's Ctrl-C reaches both once), and COMMAND's \
                exit code, or 128+N when signal N ended it, is this tool's. An output that is \
                a terminal stays one for COMMAND (a pseudo-terminal of this tool's, of the same \
                size); any other is a pipe. A value under 8 bytes is refused (its marker \
                would replace common text) unless --mask-short-values. Masking is for logs, CI \
                transcripts and a coding assistant's context, not a sandbox: COMMAND can still \
                send a value elsewhere, or print it in a form not listed here.

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
                keyring failed, 4 the dictionary is larger than --maximum-size (or no in-memory \
                file could be made for --file), 64 usage (also \
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
                  secure-dict exec --app com.example.app --name db \\
                      --file PGPASSFILE=pgpass --clean-env -- psql
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

        @Option(
            name: .customLong("file"),
            help: ArgumentHelp(
                "Give COMMAND the variable VAR holding the path (/proc/self/fd/N) of a sealed in-memory file with the value of KEY, which is then in no environment (repeat for more).",
                valueName: "VAR=KEY"))
        var files: [String] = []

        @Flag(
            name: .customLong("clean-env"),
            help: "Give COMMAND only the variables this command sets, and PATH, HOME, USER, LANG and TERM of this one's.")
        var cleanEnvironment = false

        @Flag(
            name: .customLong("mask"),
            help:
                "Stay COMMAND's parent and replace each value in its output (as is, base64, hex, percent-encoded, JSON-escaped) by <secure-dict:KEY>."
        )
        var mask = false

        @Flag(
            name: .customLong("mask-short-values"),
            help: "With --mask, mask values under 8 bytes too (refused otherwise).")
        var maskShortValues = false

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
            guard !variables.isEmpty || !files.isEmpty || prefix != nil else {
                throw ValidationError(
                    "Missing '--env VAR=KEY', '--file VAR=KEY' or '--all-with-prefix P': name what COMMAND gets")
            }
            guard !command.isEmpty else {
                throw ValidationError("Missing '-- COMMAND': secure-dict exec --app ID --env VAR=KEY -- COMMAND [ARGUMENTS…]")
            }
        }

        /// The `--env` and `--file` options, parsed; the same variable twice is refused.
        private var requests: [ExecVariables.Request] {
            get throws(ValidationError) {
                var requests: [ExecVariables.Request] = []
                let texts = variables.map { ($0, ExecVariables.Request.Option.env) } + files.map { ($0, .file) }
                for (text, option) in texts {
                    let request = try ExecVariables.Request(parsing: text, option: option)
                    if let first = requests.first(where: { $0.variable == request.variable }) {
                        let options = Set([first.option, option]).map { "--\($0.rawValue)" }.sorted().joined(separator: " and ")
                        throw ValidationError("\(options) set \(request.variable) twice: give each variable once")
                    }
                    requests.append(request)
                }
                return requests
            }
        }

        func perform() throws {
            // Before any library call: what COMMAND is to be started with.
            var replacement = ProcessReplacement.capture()
            replacement.keepsOnlyCleanEnvironment = cleanEnvironment
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
            // Every value's bytes first (a file's, or a variable's text), so that nothing is
            // made before every check passed.
            var given: [(variable: String, key: String, bytes: [UInt8], asFile: Bool)] = []
            for ((variable, source), value) in zip(planned, values) {
                if case .requested(let key, .file) = source {
                    given.append((variable, key, try ExecVariables.fileBytes(of: value!, key: key), true))
                } else {
                    let text = try ExecVariables.text(of: value!, key: source.key, dataAsBase64: dataAsBase64)
                    try ExecVariables.checkSize(of: variable, text, key: source.key, location: location)
                    given.append((variable, source.key, Array(text.utf8), false))
                }
            }
            if mask && !maskShortValues, let short = given.first(where: { $0.bytes.count < ExecMask.shortestValue }) {
                throw CommandFailure.usage(
                    """
                    --mask: key \(ExecVariables.quoted(short.key)) (for \(short.variable)) holds a value under \
                    \(ExecMask.shortestValue) bytes, too short to mask safely (its marker would replace common text): \
                    nothing was run; give --mask-short-values to mask it anyway
                    """)
            }
            let masks = mask ? given.map { (key: $0.key, bytes: $0.bytes) } : []
            var assignments: [(name: String, value: String)] = []
            var made: [Int32] = []
            for index in given.indices {
                if given[index].asFile {
                    let file = try SealedValueFile(holding: &given[index].bytes, for: given[index].variable)
                    made.append(file.descriptor)
                    assignments.append((given[index].variable, file.path))
                } else {
                    assignments.append((given[index].variable, String(decoding: given[index].bytes, as: UTF8.self)))
                }
            }
            try ExecVariables.checkTotal(replacement.argumentBytes(for: command, adding: assignments))
            // The passphrase's descriptor is the tool's, not COMMAND's: it opens every dictionary.
            let secrets = global.keyring.storage.passphraseFD.map { [$0] } ?? []
            if mask {
                throw ExitCode(replacement.runMasked(command, adding: assignments, closing: secrets, passing: made, masks: masks))
            }
            let failure = replacement.replace(with: command, adding: assignments, closing: secrets, passing: made)
            printError(failure.message)
            throw ExitCode(failure.status)
        }
    }
}
