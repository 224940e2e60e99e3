// swift-tools-version:6.0
import PackageDescription

// One binary (`sidecar`) built from infrastructure modules that know nothing of
// transit (HTTPServer, HTTPClient, Database on SQLite or PostgreSQL, Crypto and
// the C shims) and the
// application module SidecarKit, which holds one folder per feature.
let package = Package(
    name: "Sidecar",
    // iOS is for apps using the SidecarClient library (the server builds for Linux and macOS).
    platforms: [.macOS(.v15), .iOS(.v16)],
    products: [
        .executable(name: "sidecar", targets: ["sidecar"]),
        // For apps and tools: the rider API's rules, with nothing but Foundation.
        .library(name: "SidecarClient", targets: ["SidecarClient"]),
    ],
    targets: [
        // C libraries from Debian, linked through pkg-config.
        .systemLibrary(
            name: "CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CQRencode", pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(
            name: "CPostgres", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        // JSON parsing (Core's JSONValue).
        .systemLibrary(
            name: "CJansson", pkgConfig: "jansson",
            providers: [.apt(["libjansson-dev"])]),
        // gzip for responses (Content-Encoding) and PNG framing.
        .systemLibrary(
            name: "CZlib", pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]),

        // Infrastructure.
        // Names threads (pthread_setname_np needs _GNU_SOURCE, which Swift's Glibc lacks).
        .target(name: "CThreadName"),
        .target(name: "PlatformThreads", dependencies: ["CThreadName", "Core"]),
        // Logging and JSON values shared by every module.
        .target(name: "Core", dependencies: ["CJansson"]),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "CZlib", "Core", "PlatformThreads"]),
        .target(name: "HTTPClient", dependencies: ["CCurl", "PlatformThreads"]),
        .target(name: "Database", dependencies: ["CSQLite", "CPostgres", "PlatformThreads"]),
        .target(name: "Crypto", dependencies: ["COpenSSL", "Core"]),
        .target(name: "OBA", dependencies: ["HTTPClient", "Core"]),
        .target(name: "GTFSRealtime", dependencies: ["Core"]),
        // Counters, gauges and histograms in Prometheus's text format.
        .target(name: "Metrics"),
        // Server-rendered pages that escape by default.
        .target(name: "HTML"),
        // QR codes (libqrencode) as SVG and PNG (zlib).
        .target(name: "QRCode", dependencies: ["CQRencode"]),
        .target(name: "Push", dependencies: ["HTTPClient", "Core", "Crypto"]),

        // The application: one folder per feature.
        // Resources/openapi.yaml is embedded in the binary (GET /openapi.yaml).
        .target(
            name: "SidecarKit",
            dependencies: [
                "HTTPServer", "HTTPClient", "Database", "Crypto", "OBA", "Push", "GTFSRealtime", "Metrics", "HTML", "QRCode", "SidecarClient",
            ],
            resources: [.embedInCode("Resources/openapi.yaml")]),
        .executableTarget(name: "sidecar", dependencies: ["SidecarKit"]),
        // No server module: it builds for iOS, macOS and Linux.
        .target(name: "SidecarClient"),

        // What the test targets share: a raw-socket HTTP client for tests that
        // must send malformed bytes, the apps' fixtures, the off-pool runner,
        // and a PostgreSQL database per test.
        .target(name: "TestSupport", dependencies: ["HTTPServer", "HTTPClient", "Database"], path: "Tests/TestSupport"),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"]),
        .testTarget(name: "DatabaseTests", dependencies: ["Database", "PlatformThreads", "TestSupport"]),
        .testTarget(name: "HTMLTests", dependencies: ["HTML"]),
        .testTarget(name: "SidecarClientTests", dependencies: ["SidecarClient"]),
        .testTarget(name: "PushTests", dependencies: ["Push", "Crypto", "HTTPServer", "HTTPClient", "TestSupport"]),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "HTTPServer", "TestSupport"]),
        .testTarget(name: "GTFSRealtimeTests", dependencies: ["GTFSRealtime", "TestSupport"]),
        .testTarget(name: "OBATests", dependencies: ["OBA", "HTTPClient", "HTTPServer", "TestSupport"]),
        .testTarget(
            name: "SidecarKitTests",
            dependencies: [
                "SidecarKit", "HTTPServer", "HTTPClient", "Database", "Crypto", "OBA", "Push", "GTFSRealtime", "Metrics", "HTML", "QRCode",
                "SidecarClient", "TestSupport", "CZlib",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
