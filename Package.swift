// swift-tools-version:6.1
import PackageDescription

/// The strict settings swift-log builds with, for every Swift target (see the end of this file).
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),            // SE-0335: `any` on every existential
    .enableUpcomingFeature("MemberImportVisibility"),    // SE-0444: members only from imported modules
    .enableUpcomingFeature("InternalImportsByDefault"),  // SE-0409: imports are internal by default
]

let package = Package(
    name: "SecureDictionary",
    products: [
        .library(name: "SecureDictionary", targets: ["SecureDictionary"]),
        // Dictionaries kept in encrypted files instead of the keyring: EncryptedFileStore, under
        // a credential, a passphrase or the Secret portal's key (sandboxed apps). A product of
        // its own, so that the core builds no swift-crypto.
        .library(name: "SecureDictionaryFileStore", targets: ["SecureDictionaryFileStore"]),
        // Adoption of the per-key items other libraries keep in the keyring (python keyring,
        // keytar, go-keyring, QtKeychain), and the way back: a product of its own, so that a
        // dictionary user sees none of it.
        .library(name: "SecureDictionaryAdoption", targets: ["SecureDictionaryAdoption"]),
        // A swift-configuration provider over one dictionary. A product of its own, so that the
        // core builds no swift-configuration.
        .library(name: "SecureDictionaryConfiguration", targets: ["SecureDictionaryConfiguration"]),
        .executable(name: "secure-dict", targets: ["secure-dict"]),
        // Checks shared by the tests and the reliability suite (a package of its own, so this
        // must be a product). Not for use in applications.
        .library(name: "SecureDictionaryTestSupport", targets: ["SecureDictionaryTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        // AES-GCM and HKDF for the encrypted files of SecureDictionaryFileStore only.
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        // ConfigProvider, for SecureDictionaryConfiguration only. Its traits: Logging (swift-log,
        // already here) for the test of its access logging; not JSON, YAML (Yams) or Reloading
        // (swift-service-lifecycle, swift-metrics).
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: ["Logging"]),
        // `swift package generate-documentation` for the DocC catalog.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        // libsecret, found through pkg-config; Debian/Ubuntu: apt-get install libsecret-1-dev.
        .systemLibrary(
            name: "CLibSecret",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]
        ),
        // What Swift cannot express: the no-prompt SecretService subclass, GVariant building,
        // the writer lock and signal watcher in GLib main contexts of their own.
        .target(name: "CSecretShim", dependencies: ["CLibSecret"]),
        .target(
            name: "SecureDictionary",
            dependencies: [
                "CLibSecret",
                "CSecretShim",
                // Duration's conversions and the one-shot wait, shared with the tool and the tests.
                "ProcessSpawning",
                .product(name: "Logging", package: "swift-log"),
            ],
            // Imports are internal unless marked `public import`: libsecret and GLib (CLibSecret,
            // CSecretShim) can then never appear in the public API, which the compiler checks.
            // Test hooks (a client that mangles writes, a pause before a read-back) exist only
            // in debug builds, as swift-system's ENABLE_MOCKING does.
            swiftSettings: strictSettings + [.define("ENABLE_TESTING_HOOKS", .when(configuration: .debug))]
        ),
        // The kernel keyring's system calls and scrypt into a wiped buffer, for the file stores.
        .target(name: "CFileStoreShim", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // The Secret portal call of the file store's portal key (GIO, on the core's session bus connection).
        .target(name: "CSecretPortal", dependencies: ["CLibSecret", "CSecretShim"]),
        .target(
            name: "SecureDictionaryFileStore",
            dependencies: [
                "SecureDictionary",
                "CLibSecret",
                "CSecretPortal",
                "CFileStoreShim",
                // DirectoryEntries: the one reader of `readdir`'s records.
                "ProcessSpawning",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "SecureDictionaryAdoption",
            dependencies: ["SecureDictionary"],
            // The kill points of the adoption tests (SD_TEST_ADOPTION_KILL_AT), in debug builds only.
            swiftSettings: strictSettings + [.define("ENABLE_TESTING_HOOKS", .when(configuration: .debug))]
        ),
        .target(
            name: "SecureDictionaryConfiguration",
            dependencies: ["SecureDictionary", .product(name: "Configuration", package: "swift-configuration")],
            // As swift-configuration builds: its protocols' async functions (and the closures they
            // take) run on the caller's executor, and the provider's must match them.
            swiftSettings: strictSettings + [.enableUpcomingFeature("NonisolatedNonsendingByDefault")]
        ),
        .executableTarget(
            name: "remember-token",
            dependencies: ["SecureDictionary"],
            path: "Examples/remember-token"
        ),
        // A second process for the cross-process integration tests.
        .executableTarget(
            name: "sd-test-writer",
            dependencies: [
                "SecureDictionary", "SecureDictionaryFileStore", "SecureDictionaryTestSupport", "SecureDictionaryConfiguration",
                "ProcessSpawning", .product(name: "Configuration", package: "swift-configuration"),
            ],
            path: "Tests/Support/sd-test-writer"
        ),
        // An async program without Foundation that leaves out its application ID, for the
        // integration test that it ends.
        .executableTarget(
            name: "sd-async-default-id",
            dependencies: ["SecureDictionary"],
            path: "Tests/Support/sd-async-default-id"
        ),
        .target(
            name: "SecureDictionaryTestSupport",
            dependencies: ["SecureDictionary", "ProcessSpawning", .product(name: "Logging", package: "swift-log")],
            path: "Tests/Support/SecureDictionaryTestSupport"
        ),
        .testTarget(
            name: "SecureDictionaryTests",
            dependencies: [
                "SecureDictionary", "SecureDictionaryFileStore", "SecureDictionaryAdoption", "SecureDictionaryTestSupport",
                "ProcessSpawning",
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "KeyringIntegrationTests",
            dependencies: [
                "SecureDictionary", "SecureDictionaryFileStore", "SecureDictionaryAdoption", "SecureDictionaryTestSupport",
                "sd-test-writer", "sd-async-default-id",
                "wait-for-keyring", "CLibSecret",
                "CSecretShim",
                "SecureDictionaryConfiguration",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "ConfigurationTesting", package: "swift-configuration"),
            ]
        ),
        // The provider of SecureDictionaryConfiguration on the in-memory store (the keyring's
        // tests of it are in KeyringIntegrationTests).
        .testTarget(
            name: "SecureDictionaryConfigurationTests",
            dependencies: [
                "SecureDictionaryConfiguration", "SecureDictionary", "SecureDictionaryTestSupport",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "ConfigurationTesting", package: "swift-configuration"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        // What the tool needs from C: prctl (variadic), for `keyring run`.
        // The one child-process helper (posix_spawn) of the tool and the test support, so of
        // the tests and the reliability suite too. Package-internal: no product of its own.
        .target(name: "ProcessSpawning", swiftSettings: strictSettings),
        // The command-line tool: read, write, list, export and import dictionaries.
        .executableTarget(
            name: "secure-dict",
            dependencies: [
                "SecureDictionary",
                "SecureDictionaryFileStore",
                "SecureDictionaryAdoption",
                "CSecretShim",
                "ProcessSpawning",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(name: "settings-store", dependencies: ["SecureDictionary"], path: "Examples/settings-store"),
        .executableTarget(name: "token-cache", dependencies: ["SecureDictionary"], path: "Examples/token-cache"),
        .executableTarget(
            name: "feature-dictionaries", dependencies: ["SecureDictionary"], path: "Examples/feature-dictionaries"),
        .executableTarget(name: "wait-for-keyring", dependencies: ["SecureDictionary"], path: "Examples/wait-for-keyring"),
        // Runs the built secure-dict against the private keyring (the dependency gets it built).
        .testTarget(
            name: "SecureDictCLITests",
            dependencies: [
                "secure-dict", "SecureDictionary", "SecureDictionaryTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The strict settings on every Swift target: the tool, the examples, the test support and the
// tests too. A target that states settings of its own adds `strictSettings` to them, as
// SecureDictionary does.
for target in package.targets where target.type != .system && target.swiftSettings == nil {
    target.swiftSettings = strictSettings
}
