import Foundation
import SecureDictionaryTestSupport
import Testing

/// `scripts/install-cli`, as a user runs it. It builds in release with the
/// Swift runtime linked in, in `.build/static-cli`: minutes the first time, seconds afterwards.
/// No keyring either, so in the suite that scripts/provider-matrix knows as provider-independent.
extension SecureDictUsage {
    @Test(.timeLimit(.minutes(30)))
    func installsAStrippedBinaryAndExplainsTheBuildsWarnings() throws {
        let root = PrivateKeyring.packageRoot
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("sd-install-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        let install = try ChildProcess.run(
            root.appendingPathComponent("scripts/install-cli").path, ["--prefix", prefix], timeout: .seconds(1800))
        #expect(install.status == 0, "\(install)")
        let installed = prefix + "/bin/secure-dict"

        // Stripped: no symbol table, no debug information; 44 MB before, 19.6 MB after.
        let sections = try ChildProcess.run("/usr/bin/readelf", ["--section-headers", "--wide", installed])
        #expect(sections.status == 0, "\(sections)")
        #expect(!sections.text.contains(".symtab") && !sections.text.contains(".debug_"), "\(sections.text)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: installed)[.size] as? Int)
        #expect(size < 25_000_000, "\(size) bytes")
        #expect(try ChildProcess.run(installed, ["--version"]).status == 0)

        // The two known warnings are not shown; when the build printed them, they are explained.
        #expect(!install.stderr.contains("warning: prohibited flag(s): -pthread"), "\(install.stderr)")
        #expect(!install.stderr.contains("warning: the use of `mktemp' is dangerous"), "\(install.stderr)")
        let log =
            (try? String(contentsOfFile: root.appendingPathComponent(".build/static-cli/install-cli.log").path, encoding: .utf8))
            ?? ""
        if log.contains("warning: prohibited flag(s): -pthread") || log.contains("warning: the use of `mktemp' is dangerous") {
            #expect(install.stderr.contains("install-cli: left out above"), "\(install.stderr)")
        }
    }
}
