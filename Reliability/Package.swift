// swift-tools-version:6.1
// The reliability suite of SecureDictionary: `scripts/reliability [--full]`.
// A package of its own, so its build (and its dependency on the library, by path) never
// slows down or changes the library's own `swift build` / `swift test`.
import PackageDescription

let package = Package(
    name: "SecureDictionaryReliability",
    dependencies: [
        .package(name: "SecureDictionary", path: ".."),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
    ],
    targets: [
        .executableTarget(
            name: "sd-reliability",
            dependencies: [
                .product(name: "SecureDictionary", package: "SecureDictionary"),
                .product(name: "SecureDictionaryFileStore", package: "SecureDictionary"),
                .product(name: "SecureDictionaryTestSupport", package: "SecureDictionary"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
