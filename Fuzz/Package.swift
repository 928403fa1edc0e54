// swift-tools-version:6.0
import PackageDescription

// The libFuzzer harness, in a package of its own because it needs its own compiler flags
// (-sanitize=fuzzer links libFuzzer's main). How to build and run it: docs/fuzzing.md.

// SwiftPM names a path dependency after its directory, whatever the checkout is called.
let tokend = Context.packageDirectory.split(separator: "/").dropLast().last.map { String($0).lowercased() } ?? "tokend"

let package = Package(
    name: "tokend-fuzz",
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(
            name: "tokend-fuzz",
            dependencies: [.product(name: "TokendFuzzing", package: tokend)]),
    ],
    swiftLanguageModes: [.v6]
)
