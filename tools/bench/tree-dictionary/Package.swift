// swift-tools-version:6.0
// An experiment, not part of the build: one copy of the live state by structural sharing
// (swift-collections' TreeDictionary, a persistent hash trie) against the hash tables the
// live state uses, measured as the writer would use it (docs/PERFORMANCE.md, "One copy
// by structural sharing: measured, not taken"). Run: swift run -c release --package-path
// tools/bench/tree-dictionary
import PackageDescription

let package = Package(
    name: "tree-dictionary",
    dependencies: [.package(url: "https://github.com/apple/swift-collections.git", exact: "1.6.0")],
    targets: [
        .executableTarget(
            name: "tree-dictionary",
            dependencies: [.product(name: "HashTreeCollections", package: "swift-collections")]
        )
    ]
)
