// swift-tools-version: 6.1
// Microbenchmarks of ChordStore's hot paths (ordo-one/benchmark), in a package of their
// own so that the main build and CI never compile the benchmark framework.
//
// Run: cd Benchmarks && swift package benchmark        (see ../docs/PERFORMANCE.md)
import PackageDescription

let package = Package(
    name: "ChordStoreBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "ChordStoreBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ChordStoreEngine", package: "main"),
                .product(name: "ChordStoreWire", package: "main"),
                .product(name: "ChordStoreDomain", package: "main"),
            ],
            path: "Benchmarks/ChordStoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
