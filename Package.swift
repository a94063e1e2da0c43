// swift-tools-version: 6.1
import Foundation
import PackageDescription

/// Settings every ChordStore target shares: Swift 6 strict concurrency plus the
/// upcoming features the house style asks for.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// Tests that drive sockets through Glibc skip MemberImportVisibility: it attributes
/// Glibc's `sockaddr_in` members to NIO's C shim module.
let socketTestSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "ChordStore",
    // The floors are those of the lowest OS releases with Synchronization's Mutex and
    // Atomic, which the client and the replica use (iOS 18, macOS 15); nothing in the
    // modules an app builds needs more (tools/check-portable checks it).
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "chordstore", targets: ["chordstore"]),
        .executable(name: "chordstore-check", targets: ["chordstore-check"]),
        .library(name: "ChordStoreEngine", targets: ["ChordStoreEngine"]),
        .library(name: "ChordStoreDomain", targets: ["ChordStoreDomain"]),
        .library(name: "ChordStoreClient", targets: ["ChordStoreClient"]),
        .library(name: "ChordStoreReplica", targets: ["ChordStoreReplica"]),
        .library(name: "ChordStoreReplicaFormat1", targets: ["ChordStoreReplicaFormat1"]),
        .library(name: "ChordStoreServer", targets: ["ChordStoreServer"]),
        .library(name: "ChordStoreWire", targets: ["ChordStoreWire"]),
        .library(name: "ChordStoreTesting", targets: ["ChordStoreTesting"]),
    ],
    dependencies: [
        // `traits: []`: with the default traits SwiftPM 6.3 rebuilds SwiftProtobuf on
        // every switch between `swift build` and `swift test`.
        .package(url: "https://github.com/apple/swift-protobuf.git", exact: "1.39.0", traits: []),
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio.git", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-log.git", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", exact: "2.37.6"),
        // The client's transport on Apple platforms (Network.framework); nothing on Linux.
        .package(url: "https://github.com/apple/swift-nio-transport-services.git", exact: "1.28.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", exact: "3.12.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", exact: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", exact: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", exact: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-http-types.git", exact: "1.8.0"),
        .package(url: "https://github.com/grpc/grpc-swift-2.git", exact: "2.4.3"),
        .package(url: "https://github.com/grpc/grpc-swift-nio-transport.git", exact: "2.9.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", exact: "1.46.0"),
        // The device replica's storage (SQLite; part of iOS and macOS, libsqlite3-dev here).
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
    ],
    targets: [
        // C: only a modulemap and a shim header, as swift-nio's CNIO* targets.
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        // glibc names the Glibc module does not export (malloc_trim, statfs, O_DIRECT): a shim only.
        .systemLibrary(name: "CSystemExtras"),
        // A small, typed Swift wrapper over liblmdb. Knows nothing of chordsets.
        .target(
            name: "LMDB",
            dependencies: ["CLMDB", "CSystemExtras"],
            swiftSettings: strictSettings
        ),
        // The pure core: values, commands, events, validation and the fold. No I/O.
        .target(
            name: "ChordStoreDomain",
            swiftSettings: strictSettings
        ),
        // Code generated from proto/ by tools/generate-protos (committed, never a build plugin).
        .target(
            name: "ChordStoreProto",
            dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        // The API's edge: every method of the service declared once (its messages, kind and
        // permission), and the one mapping between protobuf messages and domain values.
        // What apps, the server and the tools share; no I/O, no engine.
        .target(
            name: "ChordStoreAPI",
            dependencies: [
                "ChordStoreDomain",
                "ChordStoreProto",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
        // The log's records and the chordsets' orders, as the engine and a device replica
        // share them: the record codec and its XXH64 checksum chain, the index keys, queries
        // over in-memory indexes, the directory lock. Portable (Linux, iOS, macOS); no I/O
        // but the lock file.
        .target(
            name: "ChordStoreRecords",
            dependencies: [
                "ChordStoreAPI",
                "ChordStoreDomain",
                "ChordStoreProto",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
        // The engine: event log (LMDB or in memory), group-committing writer, projections.
        .target(
            name: "ChordStoreEngine",
            dependencies: [
                "ChordStoreAPI",
                "ChordStoreRecords",
                "ChordStoreDomain",
                "ChordStoreProto",
                "CSystemExtras",
                "LMDB",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
        // The wire protocol: framing, status codes, method names. No sockets, no engine.
        .target(
            name: "ChordStoreWire",
            dependencies: [
                "ChordStoreDomain",
                "ChordStoreProto",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
        // The TCP server: connections, calls, limits, dispatch to the engine.
        .target(
            name: "ChordStoreServer",
            dependencies: [
                "ChordStoreAPI",
                "ChordStoreReplication",
                "ChordStoreWire",
                "ChordStoreEngine",
                "ChordStoreRecords",
                "ChordStoreDomain",
                "ChordStoreProto",
                "CSystemExtras",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
        // The HTTP endpoint: the web console, JSON calls, Prometheus metrics and health
        // checks, beside the protocol's port.
        .target(
            name: "ChordStoreHTTP",
            dependencies: [
                "ChordStoreAPI",
                "ChordStoreServer",
                "ChordStoreReplication",
                "ChordStoreEngine",
                "ChordStoreRecords",
                "ChordStoreDomain",
                "ChordStoreProto",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            // The web console's page, script and style, compiled into the binary.
            resources: [
                .embedInCode("Console/index.html"),
                .embedInCode("Console/console.js"),
                .embedInCode("Console/console.css"),
            ],
            swiftSettings: strictSettings
        ),
        // The standard gRPC endpoint (`serve --grpc-port`): the registry's methods over
        // HTTP/2 with grpc-swift 2, plus the gRPC health service.
        .target(
            name: "ChordStoreGRPC",
            dependencies: [
                "ChordStoreAPI",
                "ChordStoreServer",
                "ChordStoreWire",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            // Every proto's descriptor, for the reflection service (tools/generate-protos).
            resources: [.embedInCode("Generated/descriptors.protoset")],
            swiftSettings: strictSettings
        ),
        // The Swift client library: async calls over one connection.
        .target(
            name: "ChordStoreClient",
            dependencies: [
                "ChordStoreAPI",
                "ChordStoreWire",
                "ChordStoreProto",
                "ChordStoreDomain",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(
                    name: "NIOTransportServices", package: "swift-nio-transport-services",
                    condition: .when(platforms: [.macOS, .iOS, .tvOS, .watchOS, .visionOS])),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
        // Devices: an offline-first local replica of one store, synced through its feed.
        .target(
            name: "ChordStoreReplica",
            dependencies: [
                "ChordStoreAPI",
                "ChordStoreClient",
                "ChordStoreRecords",
                "ChordStoreWire",
                "ChordStoreDomain",
                "ChordStoreProto",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
        // Reading a replica directory of format 1 (LMDB, Linux only) to move it to format 2:
        // apart from the replica, so that an app builds no LMDB.
        .target(
            name: "ChordStoreReplicaFormat1",
            dependencies: ["ChordStoreReplica", "LMDB"],
            swiftSettings: strictSettings
        ),
        // Replication: roles, the follower's copy of the leader's log, quorum writes,
        // promotion and fencing. Uses the client to reach the other members.
        .target(
            name: "ChordStoreReplication",
            dependencies: [
                "ChordStoreAPI",
                "ChordStoreEngine",
                "ChordStoreRecords",
                "ChordStoreClient",
                "ChordStoreWire",
                "ChordStoreDomain",
                "ChordStoreProto",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
        // The coordinator on etcd (`serve --coordinator`): the leader lease, the epoch
        // counter and the member list, through etcd's v3 gRPC API with grpc-swift 2.
        .target(
            name: "ChordStoreEtcd",
            dependencies: [
                "ChordStoreReplication",
                "ChordStoreClient",
                "ChordStoreDomain",
                "ChordStoreProto",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "chordstore",
            dependencies: [
                "ChordStoreAPI",
                "ChordStoreServer",
                "ChordStoreHTTP",
                "ChordStoreGRPC",
                .product(name: "GRPCCore", package: "grpc-swift-2"),
                .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                "ChordStoreReplica",
                "ChordStoreReplicaFormat1",
                "ChordStoreRecords",
                "ChordStoreReplication",
                "ChordStoreEtcd",
                "ChordStoreClient",
                "ChordStoreWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                "ChordStoreEngine",
                "ChordStoreDomain",
                "ChordStoreProto",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        // The replication checker: a cluster under faults, and what its log lost.
        .executableTarget(
            name: "chordstore-check",
            dependencies: [
                "ChordStoreAPI",
                "ChordStoreDomain",
                "ChordStoreClient",
                "ChordStoreTesting",
                "ChordStoreWire",
                "ChordStoreProto",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        // Helpers for tests of ChordStore, here and in users' code, and for
        // chordstore-check: an etcd of one's own.
        .target(
            name: "ChordStoreTesting",
            dependencies: ["ChordStoreClient"],
            swiftSettings: socketTestSettings
        ),
        // Helpers several test targets share: a raw socket client, a scratch tmpfs, a thread
        // of its own for a test that computes for seconds (ThreadExecutor).
        .target(
            name: "TestSupport",
            dependencies: ["ChordStoreProto", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            path: "Tests/TestSupport",
            swiftSettings: socketTestSettings
        ),
        .testTarget(
            name: "LMDBTests",
            dependencies: ["LMDB", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChordStoreDomainTests",
            dependencies: ["ChordStoreDomain"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChordStoreEngineTests",
            dependencies: ["ChordStoreAPI", "ChordStoreEngine", "ChordStoreRecords", "ChordStoreDomain", "ChordStoreProto", "LMDB", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChordStoreReplicationTests",
            dependencies: ["ChordStoreReplication", "ChordStoreEngine"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChordStoreEtcdTests",
            dependencies: ["ChordStoreEtcd", "ChordStoreReplication", "ChordStoreDomain", "ChordStoreTesting", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChordStoreHTTPTests",
            dependencies: ["ChordStoreHTTP"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChordStoreGRPCTests",
            dependencies: [
                "ChordStoreGRPC",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChordStoreWireTests",
            dependencies: [
                "ChordStoreWire",
                "ChordStoreProto",
                "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChordStoreServerTests",
            dependencies: [
                "ChordStoreAPI",
                "ChordStoreServer",
                "ChordStoreReplica",
                "ChordStoreReplicaFormat1",
                "ChordStoreRecords",
                "ChordStoreReplication",
                "ChordStoreClient",
                "ChordStoreWire",
                "ChordStoreEngine",
                "ChordStoreDomain",
                "ChordStoreProto",
                "TestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: socketTestSettings
        ),
        .testTarget(
            name: "ChordStoreCLITests",
            dependencies: [
                "ChordStoreAPI",
                "chordstore", "chordstore-check", "ChordStoreReplica", "ChordStoreReplicaFormat1", "ChordStoreRecords", "ChordStoreEngine", "ChordStoreDomain", "ChordStoreClient", "ChordStoreProto",
                "ChordStoreWire", "TestSupport",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)

// The libFuzzer harnesses (Fuzz/, docs/SECURITY.md): linked and run only by tools/fuzz,
// which sets CHORDSTORE_FUZZ and builds with -sanitize=fuzzer,address in a scratch path of
// its own. Every other build compiles them as plain modules (nothing links them), so a
// change of the API they call fails `swift build`, not the fuzz step at the end of CI.
do {
    let fuzzing = ProcessInfo.processInfo.environment["CHORDSTORE_FUZZ"] != nil
    let harnesses: [(String, [Target.Dependency])] = [
        ("fuzz-frame", ["ChordStoreAPI", "ChordStoreWire", "ChordStoreProto", .product(name: "NIOCore", package: "swift-nio"),
                        .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        ("fuzz-call", ["ChordStoreAPI", "ChordStoreServer", "ChordStoreEngine", "ChordStoreDomain", "ChordStoreWire", "ChordStoreProto",
                       .product(name: "Logging", package: "swift-log"), .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        ("fuzz-record", ["ChordStoreRecords"]),
        ("fuzz-command", ["ChordStoreAPI", "ChordStoreServer", "ChordStoreEngine", "ChordStoreWire"]),
    ]
    package.targets.append(.target(name: "FuzzSupport", path: "Fuzz/FuzzSupport"))
    for (name, dependencies) in harnesses {
        package.targets.append(
            fuzzing
                ? .executableTarget(name: name, dependencies: dependencies + ["FuzzSupport"], path: "Fuzz/\(name)")
                : .target(name: name, dependencies: dependencies + ["FuzzSupport"], path: "Fuzz/\(name)"))
    }
}
