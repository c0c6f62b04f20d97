import Foundation
import SecureDictionaryTestSupport
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// `SecureDictionary.defaultApplicationID` in an app's own process: `sd-async-default-id`,
    /// async top-level code without Foundation, opens its dictionary "tokens" under the default
    /// application ID and prints whether it holds "apiToken", then the ID.
    @Suite struct DefaultApplicationID {
        /// The built fixture.
        static let program = PrivateKeyring.builtProduct("sd-async-default-id")

        /// Runs `program`; a process still running after 30 s is killed (it ends within a
        /// second when nothing hangs).
        static func run(_ program: String = program) throws -> ChildProcess.Output {
            try ChildProcess.run(program, [], timeout: .seconds(30))
        }

        /// Before: the program never ended (nor answered SIGQUIT). Working out the ID asked
        /// CoreFoundation for the main bundle from a thread of the cooperative pool, and that
        /// waited for the main thread, which `dispatch_main` had parked for good.
        @Test func anAsyncProgramWithoutFoundationThatLeavesOutItsApplicationIDEnds() throws {
            let output = try Self.run()
            #expect(output.succeeded, "\(output)")
            #expect(output.text == "token present: false\napplication ID: sd-async-default-id\n", "\(output)")
        }

        /// Where the main bundle's `Info.plist` is, as CoreFoundation looks for it on Linux:
        /// the executable's folder is the bundle (above `Contents/Linux/`, where the executable
        /// is inside a bundle's platform folder), and its `Contents/`, `Resources/` or
        /// `Support Files/` folder, whichever exists first in that order, holds the file;
        /// with none of them, the bundle folder itself.
        enum Layout: String, CaseIterable, CustomTestStringConvertible {
            case besideTheExecutableXML, besideTheExecutableBinary, inContents, executableInContentsLinux
            /// A `Resources/` folder without an `Info.plist`: the one beside the executable is
            /// not the bundle's, so there is no identifier.
            case shadowedByResources

            var testDescription: String { rawValue }

            /// Where the executable goes, and where the `Info.plist`, under the bundle folder.
            var paths: (executable: String, infoPlist: String) {
                switch self {
                case .besideTheExecutableXML, .besideTheExecutableBinary: ("sd-async-default-id", "Info.plist")
                case .inContents: ("sd-async-default-id", "Contents/Info.plist")
                case .executableInContentsLinux: ("Contents/Linux/sd-async-default-id", "Contents/Info.plist")
                case .shadowedByResources: ("sd-async-default-id", "Info.plist")
                }
            }
        }

        @Test(arguments: Layout.allCases)
        func theMainBundlesIdentifierIsTheApplicationID(_ layout: Layout) throws {
            let identifier = "it.bundle.\(UUID().uuidString)"
            let bundle = FileManager.default.temporaryDirectory.appendingPathComponent("sd-bundle-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: bundle) }
            let (executable, infoPlist) = layout.paths
            for path in [executable, infoPlist] {
                let folder = "\(bundle)/\(path)".split(separator: "/").dropLast().joined(separator: "/")
                try FileManager.default.createDirectory(atPath: "/\(folder)", withIntermediateDirectories: true)
            }
            if layout == .shadowedByResources {
                try FileManager.default.createDirectory(atPath: "\(bundle)/Resources", withIntermediateDirectories: true)
            }
            try FileManager.default.copyItem(atPath: Self.program, toPath: "\(bundle)/\(executable)")
            let plist: Data =
                layout == .besideTheExecutableBinary
                ? try BinaryPropertyListCoding.encode(["CFBundleIdentifier": .string(identifier), "CFBundleVersion": "1"])
                : Data(
                    """
                    <?xml version="1.0" encoding="UTF-8"?>
                    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
                    <plist version="1.0">
                    <dict>
                        <key>CFBundleDocumentTypes</key>
                        <array><dict><key>CFBundleIdentifier</key><string>not.the.main.one</string></dict></array>
                        <!-- <key>CFBundleIdentifier</key><string>commented.out</string> -->
                        <key>CFBundleIdentifier</key>
                        <string>\(identifier)</string>
                        <key>CFBundleVersion</key>
                        <string>1</string>
                    </dict>
                    </plist>

                    """.utf8)
            try plist.write(to: URL(fileURLWithPath: "\(bundle)/\(infoPlist)"))
            try SecureDictionary(name: "tokens", applicationID: identifier).setValue("t0ken", forKey: "apiToken")
            defer { _ = try? SecureDictionary.delete(name: "tokens", applicationID: identifier) }

            let output = try Self.run("\(bundle)/\(executable)")
            #expect(output.succeeded, "\(output)")
            let expected =
                layout == .shadowedByResources
                ? "token present: false\napplication ID: sd-async-default-id\n"
                : "token present: true\napplication ID: \(identifier)\n"
            #expect(output.text == expected, "\(output)")
        }
    }
}
