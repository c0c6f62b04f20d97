// swift-tools-version:6.1
// The SecureDictionary benchmark: a package of its own, so that `swift build` and
// `swift test` of the library never compile it. Run it with `scripts/benchmark`
// (see Benchmarks/README.md), which builds it in release and starts a private keyring.
import PackageDescription

let package = Package(
    name: "SecureDictionaryBenchmarks",
    dependencies: [
        // The library under test, from this checkout.
        .package(name: "SecureDictionary", path: "..")
    ],
    targets: [
        // libsecret for the raw baselines. The root package's CLibSecret is a target, not a
        // product, so another package cannot import it: this is our own two-file copy.
        .systemLibrary(
            name: "CRawLibSecret",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]
        ),
        .executableTarget(
            name: "sd-benchmark",
            dependencies: [
                "CRawLibSecret",
                .product(name: "SecureDictionary", package: "SecureDictionary"),
                // The encrypted-file stores, for the per-provider latency table.
                .product(name: "SecureDictionaryFileStore", package: "SecureDictionary"),
                .product(name: "SecureDictionaryTestSupport", package: "SecureDictionary"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
