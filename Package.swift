// swift-tools-version: 6.1
import PackageDescription

/// Settings every ChordStore target shares: Swift 6 strict concurrency plus the
/// upcoming features the house style asks for.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "ChordStore",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "chordstore", targets: ["chordstore"]),
        .library(name: "ChordStoreEngine", targets: ["ChordStoreEngine"]),
        .library(name: "ChordStoreDomain", targets: ["ChordStoreDomain"]),
    ],
    dependencies: [
        // `traits: []`: with the default traits SwiftPM 6.3 rebuilds SwiftProtobuf on
        // every switch between `swift build` and `swift test`.
        .package(url: "https://github.com/apple/swift-protobuf.git", exact: "1.39.0", traits: []),
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
    ],
    targets: [
        // C: only a modulemap and a shim header, as swift-nio's CNIO* targets.
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        // A small, typed Swift wrapper over liblmdb. Knows nothing of chordsets.
        .target(
            name: "LMDB",
            dependencies: ["CLMDB"],
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
        // The engine: event log (LMDB or in memory), group-committing writer, projections.
        .target(
            name: "ChordStoreEngine",
            dependencies: [
                "ChordStoreDomain",
                "ChordStoreProto",
                "LMDB",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "chordstore",
            dependencies: [
                "ChordStoreEngine",
                "ChordStoreDomain",
                "ChordStoreProto",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "LMDBTests",
            dependencies: ["LMDB"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChordStoreDomainTests",
            dependencies: ["ChordStoreDomain"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChordStoreEngineTests",
            dependencies: ["ChordStoreEngine", "ChordStoreDomain", "ChordStoreProto", "LMDB"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ChordStoreCLITests",
            dependencies: ["chordstore", "ChordStoreEngine", "ChordStoreDomain"],
            swiftSettings: strictSettings
        ),
    ]
)
