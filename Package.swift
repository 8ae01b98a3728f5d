// swift-tools-version: 6.0
import PackageDescription

// Data flow, one target per stage:
//   capture -> packets -> plugins -> timeline -> detectors -> reports
// `Peerscope` wires the stages together for embedding; `peerscope` is a thin CLI over it.

let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let yams: Target.Dependency = .product(name: "Yams", package: "Yams")
let heap: Target.Dependency = .product(name: "HeapModule", package: "swift-collections")

var targets: [Target] = [
    .systemLibrary(
        name: "CPcap",
        pkgConfig: "libpcap",
        providers: [.apt(["libpcap-dev"]), .brew(["libpcap"])]
    ),
    .systemLibrary(
        name: "CZlib",
        providers: [.apt(["zlib1g-dev"])]
    ),
    // Shared vocabulary: bytes, addresses, time, events, diagnostics, the plugin protocol.
    .target(name: "PeerscopeCore"),
    // Reading frames: pcap/pcapng files (own reader) and live interfaces (libpcap).
    .target(name: "PeerscopeCapture", dependencies: ["PeerscopeCore", "CPcap", "CZlib", heap]),
    // Link, network and transport layers: IP reassembly, TCP streams, ICMP errors.
    .target(name: "PeerscopePackets", dependencies: ["PeerscopeCore"]),
    // Decoder plugins, one per message type, and the registry that lists them.
    .target(name: "PeerscopePlugins", dependencies: ["PeerscopeCore", "CZlib", heap]),
    // Log plugins: text logs to the same peer events.
    .target(name: "PeerscopeLogs", dependencies: ["PeerscopeCore", yams]),
    // Per-peer timelines and sessions from peer events.
    .target(name: "PeerscopeTimeline", dependencies: ["PeerscopeCore"]),
    // Detectors: findings with evidence.
    .target(name: "PeerscopeDetectors", dependencies: ["PeerscopeCore", "PeerscopeTimeline"]),
    // Report model and its writers (text, JSON, SARIF, JUnit, HTML).
    .target(name: "PeerscopeReports", dependencies: ["PeerscopeCore", "PeerscopeTimeline", "PeerscopeDetectors"]),
    // Deterministic MPC traffic simulator (writes its own encodings, shares none with the decoders).
    .target(name: "PeerscopeSimulator", dependencies: []),
    // The embeddable library: runs the whole pipeline.
    .target(name: "Peerscope", dependencies: [
        "PeerscopeCore", "PeerscopeCapture", "PeerscopePackets", "PeerscopePlugins", "PeerscopeLogs",
        "PeerscopeTimeline", "PeerscopeDetectors", "PeerscopeReports", yams,
    ]),
    .executableTarget(name: "PeerscopeCLI", dependencies: ["Peerscope", "PeerscopeSimulator", argumentParser]),
    .executableTarget(name: "PeerscopeBench", dependencies: ["CPcap", "Peerscope", "PeerscopeSimulator", "PeerscopeTimeline", "PeerscopeDetectors",
                                                            "PeerscopeReports"]),
]

// Fuzz targets' entry points (plain Swift, built and tested everywhere); the regression corpus they
// found is replayed by PeerscopeFuzzTests.
targets.append(.target(name: "PeerscopeFuzzHarness", dependencies: [
    "CZlib", "PeerscopeCore", "PeerscopeCapture", "PeerscopePackets", "PeerscopePlugins", "PeerscopeLogs",
], path: "Fuzz/Harness"))
// The libFuzzer executable exists only for Scripts/fuzz (PEERSCOPE_FUZZ=1): a normal build never sees it.
if Context.environment["PEERSCOPE_FUZZ"] == "1" {
    targets.append(.executableTarget(name: "PeerscopeFuzz", dependencies: ["PeerscopeFuzzHarness"], path: "Fuzz/Main",
                                     swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
}

let testTargets: [(String, [Target.Dependency])] = [
    ("PeerscopeCoreTests", ["PeerscopeCore", "PeerscopeSimulator"]),
    ("PeerscopeCaptureTests", ["PeerscopeCapture", "PeerscopeCore", "PeerscopeSimulator"]),
    ("PeerscopePacketsTests", ["PeerscopePackets", "PeerscopeCore", "PeerscopeSimulator"]),
    ("PeerscopePipelineTests", ["PeerscopePlugins", "PeerscopeCore"]),
    ("PeerscopeDiscoveryTests", ["PeerscopePlugins", "PeerscopeCore", "PeerscopeSimulator"]),
    ("PeerscopeInvitationTests", ["PeerscopePlugins", "PeerscopeCore", "PeerscopeSimulator"]),
    ("PeerscopeSessionTests", ["PeerscopePlugins", "PeerscopeTimeline", "PeerscopeDetectors", "PeerscopeCore", "PeerscopeSimulator"]),
    ("PeerscopeLogsTests", ["PeerscopeLogs", "PeerscopeCore"]),
    ("PeerscopeAnalysisTests", ["PeerscopeTimeline", "PeerscopeDetectors", "PeerscopeReports", "PeerscopeCore", "PeerscopeSimulator"]),
    ("PeerscopeSimulatorTests", ["PeerscopeSimulator"]),
    // End to end: the whole pipeline on the corpus, the samples and the `peerscope` binary.
    ("PeerscopeIntegrationTests", ["Peerscope", "PeerscopeCapture", "PeerscopeSimulator", "PeerscopeCore", "PeerscopePlugins"]),
    // The bench's logic that does not measure (its command line, the linearity verdict, the stage figures):
    // `@testable import` of the executable target.
    ("PeerscopeBenchTests", ["PeerscopeBench"]),
]
for (name, deps) in testTargets {
    targets.append(.testTarget(name: name, dependencies: deps))
}
targets.append(.testTarget(name: "PeerscopeFuzzTests", dependencies: ["PeerscopeFuzzHarness"], exclude: ["FuzzRegressions"]))

let package = Package(
    name: "peerscope",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "peerscope", targets: ["PeerscopeCLI"]),
        .library(name: "Peerscope", targets: ["Peerscope"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    ],
    targets: targets
)
