import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// A dictionary kept in encrypted files while no keyring ran moves into
    /// the keyring once one does, and back, with the public `SecureDictionary.move` (verified:
    /// read back and compared before the source is removed), each side in its own process.
    @Suite(.enabled(if: PrivateKeyring.provider == "gnome-keyring", "the file side is the same for every provider"))
    struct FileStoresAndTheKeyring {
        let test = TestItem("moved")
        let processes: FileStoreProcesses
        let credentials: String

        init() throws {
            processes = try FileStoreProcesses()
            credentials = "\(processes.base)/credentials"
            try processes.makeCredential(in: credentials)
        }

        private func files(_ arguments: [String]) throws -> String {
            try processes.writer(arguments, processes.credentialEnvironment(credentials)).trimmedText
        }

        private var fileCount: Int {
            let folder = "\(processes.base)/state/securedictionary"
            return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".sdict") }.count
        }

        @Test func aDictionaryMovesFromTheFilesIntoTheKeyringAndBack() throws {
            #expect(try files(["set", test.appID, test.name, "token", "made headless"]).hasPrefix("ok "))
            #expect(try files(["move-up", test.appID, test.name]) == "ok moved")
            #expect(try test.openFresh()["token"] == .string("made headless"))
            #expect(fileCount == 0, "the file was not removed")
            #expect(try files(["move-up", test.appID, test.name]) == "ok absent")
            try test.openFresh().setValue("changed in the keyring", forKey: "token")
            #expect(try files(["move-down", test.appID, test.name]) == "ok moved")
            #expect(try test.openFresh().count == 0)
            #expect(try files(["get", test.appID, test.name, "token"]) == "ok changed in the keyring")
        }

        @Test func aMoveNeverReplacesOtherContent() throws {
            #expect(try files(["set", test.appID, test.name, "token", "in the files"]).hasPrefix("ok "))
            try test.openFresh().setValue("in the keyring", forKey: "token")
            #expect(try files(["move-up", test.appID, test.name]) == "error alreadyExists")
            #expect(try files(["move-down", test.appID, test.name]) == "error alreadyExists")
            #expect(try test.openFresh()["token"] == .string("in the keyring"))
            #expect(try files(["get", test.appID, test.name, "token"]) == "ok in the files")
        }

        @Test func withAKeyringTheAutomaticChoiceIsTheSecretService() throws {
            var environment = processes.credentialEnvironment(credentials)
            environment["SD_TEST_WRITER_STORE"] = "automatic"
            environment["SD_TEST_WRITER_FILE_STORE"] = "credential"
            let choice = try processes.writer(["choice"], environment)
            #expect(choice.trimmedText.hasPrefix("ok secretService "), "\(choice)")
            #expect(try processes.writer(["set", test.appID, test.name, "token", "v"], environment).succeeded)
            #expect(try test.openFresh()["token"] == .string("v"))
            #expect(fileCount == 0)
        }
    }
}
