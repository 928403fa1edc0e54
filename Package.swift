// swift-tools-version:6.0
import PackageDescription

// Module layout: docs/architecture.md, "Modules" (ModuleTableTests checks its table against the
// targets below). TokendCore is pure (no I/O, no dependency: CoreIsPureTests checks it); the
// process's threads, timers, clock and environment are TokendSystem's. TokendCore, TokendSystem
// and TokendProtocol stay off NIO and full Foundation so that tokenctl starts fast.
let package = Package(
    name: "tokend",
    products: [
        .executable(name: "tokend", targets: ["tokend"]),
        .executable(name: "tokenctl", targets: ["tokenctl"]),
        .executable(name: "docker-credential-tokend", targets: ["docker-credential-tokend"]),
        .executable(name: "tokend-fake-firebase", targets: ["tokend-fake-firebase"]),
        // For Fuzz/, a separate package (libFuzzer needs its own build flags): packages can only
        // depend on products.
        .library(name: "TokendFuzzing", targets: ["TokendFuzzing"]),
        // Loaded beside libfaketime by the clock tests and scripts/chaos (tests only; never shipped).
        .library(name: "TokendFaketimeFix", type: .dynamic, targets: ["CTokendFaketimeFix"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
        // ID token signatures (OpenID Connect logins) and PKCE's SHA-256: no hand-rolled crypto.
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        // The fakes' HTTP server (tests and the demo only; the daemon never links it).
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // A fleet's mutual TLS to etcd (TokendFleet) and the proxy's upstream CA (`ca = "…"`,
        // TokendProxy); already in the tree under async-http-client.
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        .target(name: "TokendCore"),
        // The real clock, timer thread, threads and process environment behind TokendCore's
        // protocols: the one place the core's values meet the kernel's clocks.
        .target(name: "TokendSystem", dependencies: ["TokendCore", "CTokendShims"]),
        .target(name: "TokendProtocol", dependencies: ["TokendCore", "CTokendShims"]),
        .systemLibrary(
            name: "CLibsecret", pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev", "libglib2.0-dev"])]),
        .target(name: "CTokendShims", cSettings: [.define("_GNU_SOURCE")]),
        .target(name: "CTokendFaketimeFix"),
        // The `tpm2` store's ESYS calls (tpm2-tss, Debian's libtss2-dev): the TCTI loader, so
        // /dev/tpmrm0, swtpm: and mssim: all work, and the marshalling of the sealed object.
        // Not linked: loaded (dlopen, in glibc's libc since 2.34) when the store is first used,
        // so a daemon on another store never maps libtss2-* and libcrypto (Sources/CTokendTPM2/tss2.h).
        .target(name: "CTokendTPM2"),
        .target(
            name: "TokendKeyring",
            dependencies: [
                "TokendCore", "TokendSystem", "CLibsecret", "CTokendShims", "CTokendTPM2",
                // The `tpm2` store's AES-256-GCM.
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .target(
            name: "TokendProviders",
            dependencies: [
                // TokendProtocol for the wire's verbs (`LoginMethod`) only.
                "TokendCore", "TokendSystem", "TokendProtocol", "CTokendShims",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // One session shared by several daemons through etcd v3 (README, "A fleet"): etcd's JSON
        // gateway over mutual TLS, the fleet's sealing key, the election, the provider and store
        // wrappers a fleet account gets.
        .target(
            name: "TokendFleet",
            dependencies: [
                "TokendCore", "TokendSystem", "TokendKeyring", "TokendProviders",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // The consumers' HTTP forward proxy that adds the token (README, "The proxy"): NIO's HTTP/1
        // codecs toward the client, async-http-client toward the upstream. TokendProviders for its
        // loopback peer check (LoopbackPeer) alone.
        .target(
            name: "TokendProxy",
            dependencies: [
                "TokendCore", "TokendProviders", "CTokendShims",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        .target(
            name: "TokendServer",
            dependencies: [
                "TokendCore", "TokendSystem", "TokendProtocol", "TokendKeyring", "TokendProviders", "TokendFleet", "TokendProxy", "CTokendShims",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ]),
        .executableTarget(
            name: "tokend",
            dependencies: [
                "TokendServer", "TokendSystem", "CTokendShims",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        // tokenctl's commands, shared by its two executables: tokenctl and the docker credential
        // helper (which container tools find on PATH by that name).
        .target(
            name: "TokenctlKit",
            dependencies: [
                "TokendProtocol", "TokendSystem", "CTokendShims",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        .executableTarget(name: "tokenctl", dependencies: ["TokenctlKit", "TokendProtocol"]),
        .executableTarget(name: "docker-credential-tokend", dependencies: ["TokenctlKit", "TokendProtocol"]),
        // The manual clock alone, so that pure-logic tests link nothing but the core.
        .target(name: "TokendTestClock", dependencies: ["TokendCore"]),
        // Child processes, the private keyring, an in-memory secret store, temporary directories:
        // no HTTP, no NIO.
        .target(name: "TokendTestSupport", dependencies: ["TokendCore", "TokendSystem", "CTokendShims", "TokendTestClock", "TokendKeyring"]),
        // The fake servers tests and the demo talk to over real HTTP (Firebase, and an OpenID
        // provider beside it): one module, as they share the server scaffold.
        .target(
            name: "TokendFakes",
            dependencies: [
                // TokendProviders for its HTTP transport seam, through which a fake answers in-process.
                "TokendCore", "TokendSystem", "TokendProviders",
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // SHA-256 of nonces (signInWithIdp), and the identity-provider stand-ins' signing key.
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .executableTarget(
            name: "tokend-fake-firebase",
            dependencies: [
                // TokendServer for the daemon's signal reader (ProcessSignals), the one in the tree.
                "TokendFakes", "TokendServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // The request parser and dispatcher as one fuzzable function: Fuzz/ builds it under
        // libFuzzer, and TokendFuzzingTests replays the corpus in every test run.
        .target(
            name: "TokendFuzzing",
            dependencies: ["TokendCore", "TokendSystem", "TokendProtocol", "TokendKeyring", "TokendServer", "TokendProviders", "TokendTestSupport"]),
        .testTarget(name: "TokendFuzzingTests", dependencies: ["TokendFuzzing"], resources: [.copy("Corpus")]),
        .testTarget(name: "TokendCoreTests", dependencies: ["TokendCore", "TokendTestClock"]),
        .testTarget(name: "TokendSystemTests", dependencies: ["TokendSystem"]),
        .testTarget(name: "TokendProtocolTests", dependencies: ["TokendProtocol", "TokendTestSupport"]),
        .testTarget(name: "TokendKeyringTests", dependencies: ["TokendKeyring", "TokendTestSupport"]),
        .testTarget(name: "TokendFleetTests", dependencies: ["TokendFleet", "TokendCore"]),
        .testTarget(name: "TokendFakesTests", dependencies: ["TokendFakes", "TokendProviders", "TokendTestSupport"]),
        .testTarget(
            name: "TokendProvidersTests",
            dependencies: ["TokendProviders", "TokendTestSupport", "TokendFakes", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(
            name: "TokendServerTests",
            dependencies: [
                "TokendServer", "TokendProxy", "TokendSystem", "TokendTestSupport", "TokendFakes", "TokendTestClock",
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]),
        .testTarget(name: "TokenctlTests", dependencies: ["TokenctlKit", "TokendTestSupport"]),
        .testTarget(
            name: "TokendProxyTests",
            dependencies: [
                "TokendProxy", "TokendCore", "TokendTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["TokendProtocol", "TokendTestSupport", "TokendFakes", "TokendKeyring", "TokendProviders", "TokendServer"]),
    ],
    swiftLanguageModes: [.v6]
)
