import Foundation
import SecureDictionaryTestSupport
import Testing

/// `exec --file VAR=KEY` hands a value over as a sealed in-memory file whose path VAR holds,
/// in no environment; `--clean-env` gives COMMAND only the variables set and a documented
/// minimum. The command under test writes a report to a file; the test output never shows a
/// value.
extension ExecCommand {
    /// Reports on the file `$VALUE_FILE` names: its bytes' digest, what it is, its seals and
    /// mode, whether it can be written or shrunk, and the process's whole environment.
    static let fileReporter = """
        import fcntl, hashlib, json, os, sys
        path = os.environ["VALUE_FILE"]
        fd = int(path.rsplit("/", 1)[1])
        def attempt(action):
            try:
                action()
                return "done"
            except OSError as error:
                return os.strerror(error.errno)
        report = {
            "digest": hashlib.sha256(open(path, "rb").read()).hexdigest(),
            "link": os.readlink(path),
            "seals": fcntl.fcntl(fd, 1034),  # F_GET_SEALS
            "mode": os.fstat(fd).st_mode & 0o777,
            "write": attempt(lambda: os.write(os.open(path, os.O_WRONLY | os.O_APPEND), b"x")),
            "truncate": attempt(lambda: os.truncate(path, 0)),
            "environ": open("/proc/self/environ", "rb").read().hex(),
            "names": sorted(os.environ.keys()),
        }
        json.dump(report, open(sys.argv[1], "w"))
        """

    struct FileReport: Decodable {
        let digest: String
        let link: String
        let seals: Int
        let mode: Int
        let write: String
        let truncate: String
        let environ: String
        let names: [String]
    }

    func fileReport(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> (
        CLIHarness.Output, FileReport?
    ) {
        try Data(Self.fileReporter.utf8).write(to: URL(fileURLWithPath: "\(folder)/file-report.py"))
        let file = "\(folder)/\(name).json"
        let output = try exec(arguments + ["--", "/usr/bin/python3", "\(folder)/file-report.py", file], environment: environment)
        let report = try? JSONDecoder().decode(FileReport.self, from: Data(contentsOf: URL(fileURLWithPath: file)))
        return (output, report)
    }

    @Test(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "needs no provider: runs once, with gnome-keyring"))
    func aFileVariableHoldsTheValueInASealedMemoryFileInNoEnvironment() throws {
        let token = "tok-\(UUID().uuidString)"
        try write("apiToken", token)
        let (output, report) = try fileReport("file", ["--file", "VALUE_FILE=apiToken"])
        #expect(output.succeeded && output.stdout.isEmpty && output.stderr.isEmpty, "\(output.how) \(output.stderr)")
        expectNothingShown(output, of: [token])
        let got = try #require(report, "no report: \(output.how) \(output.stderr)")
        #expect(try got.digest == Self.digest(token), "the file does not hold the stored value")
        #expect(got.link.hasPrefix("/memfd:secure-dict"), "not an in-memory file: \(got.link)")
        // F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE
        #expect(got.seals == 0xF, "seals \(got.seals)")
        #expect(got.mode == 0o400, "mode \(String(got.mode, radix: 8))")
        let refused = "Operation not permitted"
        #expect(got.write == refused && got.truncate == refused, "write: \(got.write), truncate: \(got.truncate)")
        let environ = Data(hexadecimal: got.environ)
        #expect(environ.range(of: Data(token.utf8)) == nil, "the value is in the command's environment")
    }

    @Test(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "needs no provider: runs once, with gnome-keyring"))
    func dataGoesIntoAFileAsItsBytes() throws {
        let bytes = Data((0..<64).map { _ in UInt8.random(in: 0...255) } + [0, 10, 0])
        try write("signingKey", bytes.base64EncodedString(), type: "data")
        let (output, report) = try fileReport("data", ["--file", "VALUE_FILE=signingKey"])
        let got = try #require(report, "no report: \(output.how) \(output.stderr)")
        let digest = try CLIHarness.run("sha256sum", [], input: bytes).text.prefix { $0 != " " }
        #expect(got.digest == String(digest), "the file does not hold the data's bytes")
    }

    @Test(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "needs no provider: runs once, with gnome-keyring"))
    func cleanEnvKeepsOnlyTheVariablesSetAndTheMinimum() throws {
        try write("apiToken", "tok-\(UUID().uuidString)")
        let environment = ["SD_TEST_CALLERS_OWN": "1", "LANG": "C.UTF-8", "TERM": "dumb"]
        let (output, report) = try fileReport(
            "clean", ["--clean-env", "--file", "VALUE_FILE=apiToken", "--env", "API_TOKEN=apiToken"],
            environment: environment)
        let got = try #require(report, "no report: \(output.how) \(output.stderr)")
        let allowed: Set = ["VALUE_FILE", "API_TOKEN", "PATH", "HOME", "USER", "LANG", "TERM"]
        #expect(Set(got.names).isSubset(of: allowed), "more than the minimum: \(Set(got.names).subtracting(allowed).sorted())")
        #expect(Set(["VALUE_FILE", "API_TOKEN", "LANG", "TERM"]).isSubset(of: got.names), "\(got.names)")

        let (_, unclean) = try fileReport("unclean", ["--file", "VALUE_FILE=apiToken"], environment: environment)
        #expect(unclean?.names.contains("SD_TEST_CALLERS_OWN") == true, "without --clean-env the caller's variables pass")
    }

    @Test(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "needs no provider: runs once, with gnome-keyring"))
    func fileAndEnvCannotSetOneVariableTwice() throws {
        let output = try exec(["--file", "X=a", "--env", "X=b", "--", "true"])
        #expect(output.status == 64 && output.stderr.contains("--env and --file set X twice"), "\(output.how) \(output.stderr)")
    }
}
