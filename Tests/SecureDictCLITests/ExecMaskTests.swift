import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import secure_dict

/// `exec --mask`: every injected value, in each form a program prints secrets in, becomes
/// `<secure-dict:KEY>` in COMMAND's output, whatever writes split it; the rest of the output
/// is byte-identical.
extension CLIUnits {
    static let maskedValue = Array("pässwörd/\"quoted\"\n+tok=\(UUID().uuidString)".utf8)

    @Test func everyFormOfAValueSplitAtEveryOffsetIsMasked() throws {
        let forms = ExecMask.forms(of: Self.maskedValue)
        #expect(Set(forms).count >= 9, "the forms: \(forms.count) distinct")
        for form in Set(forms) {
            let printed = Array("before ".utf8) + form + Array(" after\n".utf8)
            let expected = Array("before <secure-dict:k> after\n".utf8)
            for split in 0...printed.count {
                var mask = ExecMask(values: [("k", Self.maskedValue)])
                let shown = mask.pass(Array(printed[..<split])) + mask.pass(Array(printed[split...])) + mask.finish()
                #expect(shown == expected, "form \(String(decoding: form, as: UTF8.self)) split at \(split)")
            }
        }
    }

    @Test func textAroundIsKeptAndAPrefixAloneGoesOutAtTheEnd() {
        var mask = ExecMask(values: [("k", Array("0123456789".utf8))])
        // "0123" could begin the value: held until the next write, then given as it is.
        #expect(mask.pass(Array("a 0123".utf8)) == Array("a ".utf8))
        #expect(mask.pass(Array("x".utf8)) == Array("0123x".utf8))
        #expect(mask.pass(Array("01234".utf8)) == [])
        #expect(mask.finish() == Array("01234".utf8))
        // The longer of two values wins where both start.
        var both = ExecMask(values: [("short", Array("abcdefgh".utf8)), ("long", Array("abcdefghijkl".utf8))])
        #expect(
            both.pass(Array("abcdefghijkl abcdefgh!".utf8)) + both.finish()
                == Array("<secure-dict:long> <secure-dict:short>!".utf8))
    }
}

/// `exec --mask` end to end, against the real keyring: the masked output of a command that
/// prints its value in every form, split across writes; exit codes, signals and streaming.
extension ExecCommand {
    /// Prints the value of $T in every form `ExecMask` knows, each form split across two
    /// flushed writes at every offset, on standard output and error; then exits with $1.
    static let formPrinter = """
        import base64, json, os, sys, time, urllib.parse
        value = os.environb[b"T"]
        forms = [value, base64.b64encode(value), base64.b64encode(value).rstrip(b"="),
                 base64.urlsafe_b64encode(value), base64.urlsafe_b64encode(value).rstrip(b"="),
                 value.hex().encode(), value.hex().upper().encode(), urllib.parse.quote(value, safe="").encode(),
                 json.dumps(value.decode())[1:-1].encode(), json.dumps(value.decode(), ensure_ascii=False)[1:-1].encode()]
        for stream in (sys.stdout.buffer, sys.stderr.buffer):
            for form in forms:
                for split in range(len(form) + 1):
                    stream.write(b"<" + form[:split]); stream.flush()
                    stream.write(form[split:] + b">\\n"); stream.flush()
        sys.exit(int(sys.argv[1]))
        """

    @Test(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "needs no provider: runs once, with gnome-keyring"))
    func maskReplacesEveryFormInTheOutputAndKeepsTheExitCode() throws {
        let token = "tök-\(UUID().uuidString)/+?"
        try write("apiToken", token)
        try Data(Self.formPrinter.utf8).write(to: URL(fileURLWithPath: "\(folder)/forms.py"))
        let output = try exec(["--mask", "--env", "T=apiToken", "--", "/usr/bin/python3", "\(folder)/forms.py", "7"])
        #expect(output.status == 7, "\(output.how) \(output.stderr.suffix(300))")
        let forms = ExecMask.forms(of: Array(token.utf8))
        var lines = 0
        for (name, stream) in [("output", output.stdout), ("error", output.stderrBytes)] {
            for form in forms { #expect(stream.range(of: Data(form)) == nil, "a form of the value in standard \(name)") }
            let text = String(decoding: stream, as: UTF8.self).split(separator: "\n")
            #expect(
                text.allSatisfy { $0 == "<<secure-dict:apiToken>>" },
                "standard \(name): \(text.filter { $0 != "<<secure-dict:apiToken>>" }.prefix(3))")
            lines += text.count
        }
        #expect(lines > 200, "only \(lines) lines")
    }

    @Test(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "needs no provider: runs once, with gnome-keyring"))
    func maskForwardsASignalAndPassesOutputAsItIsWritten() throws {
        try write("apiToken", "tok-\(UUID().uuidString)")
        // Prints a line, then waits for a signal: the line must arrive before the command ends.
        let child = try LiveChild(
            CLIHarness.binary,
            [
                "exec", "--app", app.id, "--mask", "--env", "T=apiToken", "--", "/bin/sh", "-c",
                "echo \"started $T\"; exec sleep 60",
            ])
        let first = child.nextLine(timeout: .seconds(30))
        #expect(first == "started <secure-dict:apiToken>", "\(first ?? "nothing") \(child.errors)")
        kill(child.pid, SIGTERM)
        let result = child.finish(timeout: .seconds(30))
        #expect(result.status == 128 + SIGTERM, "\(result.how)")
    }

    /// Run under `script` (a terminal for the tool's output), COMMAND's output is a terminal
    /// too, and still masked.
    @Test(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "needs no provider: runs once, with gnome-keyring"))
    func maskKeepsATerminalATerminal() throws {
        let token = "tok-\(UUID().uuidString)"
        try write("apiToken", token)
        let inner =
            "\(CLIHarness.binary) exec --app \(app.id) --mask --env T=apiToken -- "
            + "/bin/sh -c 'test -t 1 && test -t 2 && echo \"terminal $T\" && echo \"and $T\" >&2'"
        let output = try CLIHarness.run("/usr/bin/script", ["-qec", inner, "/dev/null"])
        #expect(output.status == 0, "\(output.how) \(output.text.suffix(300))")
        #expect(output.text.contains("terminal <secure-dict:apiToken>"), "\(output.text.suffix(300))")
        #expect(output.text.contains("and <secure-dict:apiToken>"), "\(output.text.suffix(300))")
        #expect(!output.text.contains(token), "the value in the terminal's output")
    }

    @Test(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "needs no provider: runs once, with gnome-keyring"))
    func maskRefusesAShortValueUnlessAsked() throws {
        try write("pin", "1234")
        let refused = try exec(["--mask", "--env", "PIN=pin", "--", "true"])
        #expect(refused.status == 64 && refused.stderr.contains("--mask-short-values"), "\(refused.how) \(refused.stderr)")
        let masked = try exec(["--mask", "--mask-short-values", "--env", "PIN=pin", "--", "/bin/sh", "-c", "echo \"pin $PIN\""])
        #expect(masked.succeeded && masked.text == "pin <secure-dict:pin>\n", "\(masked.how) \(masked.text)")
    }
}
