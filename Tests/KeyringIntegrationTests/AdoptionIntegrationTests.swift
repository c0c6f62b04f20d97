import Foundation
import SecureDictionaryAdoption
import SecureDictionaryTestSupport
import Synchronization
import Testing

@testable import SecureDictionary

extension KeyringIntegration {
    /// Adopting the per-key items other libraries wrote, made by the real libraries
    /// where Debian has them (python `keyring` 23.9.3 and `secretstorage` 3.3.3), and with
    /// `secret-tool` for those it does not (keytar, go-keyring, QtKeychain: attributes read
    /// from their sources), on every provider.
    @Suite struct Adoption {
        /// Runs python code with Debian's python and keyring forced onto its Secret Service
        /// backend (it would pick KWallet's own API where kwalletd runs).
        static func python(_ code: String) throws -> ChildProcess.Output {
            try KeyringHarness.run(
                "/usr/bin/python3", ["-c", code],
                environment: ["PYTHON_KEYRING_BACKEND": "keyring.backends.SecretService.Keyring"])
        }

        /// ``python(_:)`` until `done` holds for what it printed (``KeyringHarness/thirdParty(until:_:)``).
        static func pythonRetrying(
            _ code: String, until done: (ChildProcess.Output) -> Bool = \.succeeded
        ) throws -> ChildProcess.Output {
            try KeyringHarness.thirdParty(until: done) { try python(code) }
        }

        @Test(.timeLimit(.minutes(2))) func pythonKeyringItemsAreAdoptedReadBackAfterARestartAndRetired() throws {
            let service = "adopt-\(UUID().uuidString)"
            let app = "it.adopt.\(UUID().uuidString)"
            // Made, then read back (a garbled session stores garbage without a word).
            let made = try Self.pythonRetrying(
                """
                import keyring, secretstorage
                keyring.set_password("\(service)", "alice", "token-alice")
                keyring.set_password("\(service)", "bob", "tøken-bob")
                bus = secretstorage.dbus_init()
                carol = {"service": "\(service)", "username": "carol", "application": "Python keyring library"}
                secretstorage.get_default_collection(bus).create_item(
                    "binary", carol, b"\\x00\\xff\\x10", replace=True, content_type="application/octet-stream")
                assert keyring.get_password("\(service)", "alice") == "token-alice"
                assert keyring.get_password("\(service)", "bob") == "tøken-bob"
                [item] = secretstorage.search_items(bus, carol)
                assert item.get_secret() == b"\\x00\\xff\\x10"
                """)
            try #require(made.succeeded, "\(made.stderr)")
            let options = SecureDictionary.Options(store: SecretServiceStore())
            let first = try SecureDictionary.adopt(
                .pythonKeyring(service: service), into: "tokens", applicationID: app, options: options)
            #expect(first.items.map(\.outcome) == [.adopted, .adopted, .adopted], "\(first)")
            let kept = try Self.pythonRetrying("import keyring; print(keyring.get_password('\(service)', 'alice'))") {
                $0.trimmedText == "token-alice"
            }
            #expect(kept.trimmedText == "token-alice", "\(kept)")  // the old application still finds its item

            // KeePassXC runs here without saving after every change (scripts/providers/keepassxc
            // says why), so a restart would drop what it was given, ours or not.
            if PrivateKeyring.provider != "keepassxc" { try KeyringHarness.daemon("restart") }
            let expected: [String: SecureDictionary.Value] = [
                "alice": "token-alice", "bob": "tøken-bob", "carol": .data(Data([0x00, 0xFF, 0x10])),
            ]
            let reopened = try SecureDictionary(name: "tokens", applicationID: app, options: .init(store: SecretServiceStore()))
            #expect(reopened.snapshot == expected)

            let second = try SecureDictionary.adopt(
                .pythonKeyring(service: service), into: "tokens", applicationID: app, options: .init(store: SecretServiceStore()),
                retire: .delete)
            #expect(second.items.map(\.outcome) == [.alreadyAdopted, .alreadyAdopted, .alreadyAdopted], "\(second)")
            #expect(second.items.map(\.retirement) == [.deleted, .deleted, .deleted], "\(second)")
            let gone = try Self.pythonRetrying("import keyring; print(keyring.get_password('\(service)', 'alice'))") {
                $0.succeeded && $0.trimmedText == "None"
            }
            #expect(gone.succeeded && gone.trimmedText == "None", "\(gone)")  // fails cleanly: no such item

            // The way back, for a release that must be able to downgrade.
            let back = try SecureDictionary.exportItems(
                .pythonKeyring(service: service), from: "tokens", applicationID: app, options: .init(store: SecretServiceStore()))
            #expect(back.written == ["alice", "bob", "carol"], "\(back)")
            let read = try Self.pythonRetrying(
                """
                import keyring, secretstorage
                print(keyring.get_password('\(service)', 'alice'), keyring.get_password('\(service)', 'bob'))
                bus = secretstorage.dbus_init()
                [carol] = secretstorage.search_items(bus, {"service": "\(service)", "username": "carol"})
                print(carol.get_secret().hex())
                """
            ) { $0.trimmedText == "token-alice tøken-bob\n00ff10" }
            #expect(read.trimmedText == "token-alice tøken-bob\n00ff10", "\(read)")
        }

        /// The real QtKeychain (libqt5keychain1 0.13.2, through a small client) stores a text
        /// and a binary secret; both are adopted, retired, and written back so that QtKeychain
        /// reads them again.
        @Test(.timeLimit(.minutes(2))) func qtKeychainItemsAreAdoptedAndWrittenBack() throws {
            let client = try QtKeychainClient.built()
            let service = "adopt-\(UUID().uuidString)"
            let app = "it.adopt.\(UUID().uuidString)"
            let alice = "qt secret\n717420736563726574\n"  // QtKeychain's text, then its bytes in hex
            // Made, then read back by QtKeychain itself (a garbled session stores garbage silently).
            let made = try KeyringHarness.thirdParty(until: { $0.text == alice }) {
                _ = try client.run(["write", service, "alice", "qt secret"])
                return try client.run(["read", service, "alice"])
            }
            try #require(made.text == alice, "\(made)")
            let madeBinary = try KeyringHarness.thirdParty(until: { $0.text.hasSuffix("0001ff\n") }) {
                _ = try client.run(["write-binary", service, "bob", "0001ff"])
                return try client.run(["read", service, "bob"])
            }
            try #require(madeBinary.text.hasSuffix("0001ff\n"), "\(madeBinary)")
            let options = SecureDictionary.Options(store: SecretServiceStore())
            let report = try SecureDictionary.adopt(
                .qtKeychain(service: service), into: "tokens", applicationID: app, options: options, retire: .delete)
            #expect(report.items.map(\.retirement) == [.deleted, .deleted], "\(report)")
            let fresh = try SecureDictionary(name: "tokens", applicationID: app, options: .init(store: SecretServiceStore()))
            #expect(fresh.snapshot == ["alice": "qt secret", "bob": .data(Data([0x00, 0x01, 0xFF]))])
            #expect(!(try client.run(["read", service, "alice"]).succeeded))  // retired: QtKeychain finds nothing

            // exportItems reads each item back on its own session before it counts it written, so
            // a QtKeychain read that fails below is QtKeychain's session: the message says what
            // the library reads from the same item on a new connection.
            try SecureDictionary.exportItems(.qtKeychain(service: service), from: "tokens", applicationID: app, options: options)
            let back = try KeyringHarness.thirdParty(until: { $0.text == alice }) { try client.run(["read", service, "alice"]) }
            if back.text != alice {
                let reads = try Self.libraryReads(["server": service, "user": "alice"])
                Issue.record(
                    "QtKeychain read \(back.how); the library reads \(reads.count) item(s), as written: \(reads == ["qt secret"])"
                )
            }
            let backBinary = try KeyringHarness.thirdParty(until: { $0.text.hasSuffix("0001ff\n") }) {
                try client.run(["read", service, "bob"])
            }
            #expect(backBinary.text.hasSuffix("0001ff\n"), "\(backBinary)")
        }

        /// What the library reads from the items matching `attributes`, on a new connection: to
        /// tell a third-party client's failed session from a wrong item in a failure message.
        static func libraryReads(_ attributes: [String: String]) throws -> [String] {
            let store = SecretServiceStore()
            return try store.foreignItems(matching: attributes, in: .default, timeout: .seconds(10)).map { item in
                String(decoding: try store.foreignSecret(of: item, timeout: .seconds(10)).array, as: UTF8.self)
            }
        }

        /// keytar, go-keyring and QtKeychain, whose items are made with `secret-tool` and the
        /// attributes their sources give.
        @Test func otherLibrariesItemsAreAdopted() throws {
            let service = "adopt-\(UUID().uuidString)"
            let app = "it.adopt.\(UUID().uuidString)"
            // secret-tool stores, then looks up what it stored ("Can't find session" once in
            // Debian 13's run): see KeyringHarness.thirdParty.
            func store(_ attributes: [String: String], _ secret: String) throws {
                let pairs = attributes.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] }
                var failures = ""
                let found = { (lookup: ChildProcess.Output) in
                    lookup.succeeded && lookup.text.trimmingCharacters(in: .newlines) == secret
                }
                let lookup = try KeyringHarness.thirdParty(until: found) {
                    let stored = try ChildProcess.run(
                        "/usr/bin/secret-tool", ["store", "--label=made by a test"] + pairs, input: Data(secret.utf8))
                    let lookup = try ChildProcess.run("/usr/bin/secret-tool", ["lookup"] + pairs)
                    failures += stored.stderr + lookup.stderr
                    return lookup
                }
                try #require(found(lookup), "secret-tool: \(failures)")
            }
            try store(["service": service, "account": "kt", "xdg:schema": "org.freedesktop.Secret.Generic"], "keytar secret")
            try store(["service": service, "username": "go"], "go secret")
            try store(["server": service, "user": "qt", "type": "plaintext", "xdg:schema": "org.qt.keychain"], "qt secret")
            try store(["server": service, "user": "qtb", "type": "base64", "xdg:schema": "org.qt.keychain"], "AAEC/w==")
            var goKeyring = ForeignItems.goKeyring(service: service)
            // go-keyring writes to the `login` collection: gnome-keyring's name for its default one.
            if PrivateKeyring.provider != "gnome-keyring" { goKeyring.collection = .default }
            let options = SecureDictionary.Options(store: SecretServiceStore())
            // keytar's item also matches go-keyring's query (`service` alone) until it is retired,
            // and has no `username`: a conflict, skipped, with `.keepDictionary`.
            for items in [ForeignItems.keytar(service: service), goKeyring, .qtKeychain(service: service)] {
                try SecureDictionary.adopt(
                    items, into: "tokens", applicationID: app, options: options, conflicts: .keepDictionary, retire: .delete)
            }
            let fresh = try SecureDictionary(name: "tokens", applicationID: app, options: .init(store: SecretServiceStore()))
            #expect(
                fresh.snapshot == [
                    "kt": "keytar secret", "go": "go secret", "qt": "qt secret", "qtb": .data(Data([0, 1, 2, 255])),
                ])
        }
    }
}

/// Tests/Support/qtkeychain-client, compiled once per test process with g++ against Debian's
/// libqt5keychain1.
struct QtKeychainClient {
    let path: String

    static func built() throws -> QtKeychainClient {
        try cache.withLock { cached in
            if let cached { return cached }
            let source = PrivateKeyring.packageRoot.appendingPathComponent("Tests/Support/qtkeychain-client/main.cpp").path
            let binary = FileManager.default.temporaryDirectory.appendingPathComponent("qtkeychain-client-\(getpid())").path
            let flags = try ChildProcess.run("/usr/bin/pkg-config", ["--cflags", "--libs", "Qt5Core"])
            try #require(flags.succeeded, "pkg-config Qt5Core: \(flags.stderr)")
            let arguments =
                ["-std=c++17", "-fPIC", "-o", binary, source]
                + flags.trimmedText.split(separator: " ").map(String.init) + ["-lqt5keychain"]
            let compiled = try ChildProcess.run("/usr/bin/g++", arguments)
            try #require(compiled.succeeded, "g++: \(compiled.stderr)")
            cached = QtKeychainClient(path: binary)
            return cached!
        }
    }

    private static let cache = Mutex<QtKeychainClient?>(nil)

    func run(_ arguments: [String]) throws -> ChildProcess.Output {
        try ChildProcess.run(path, arguments, environment: ProcessInfo.processInfo.environment)
    }
}
