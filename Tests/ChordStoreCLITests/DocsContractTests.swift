import Foundation
import Testing

/// docs/PROTOCOL.md is a contract: every limit `serve` can set is listed in its §6.
@Suite("Docs contract")
struct DocsContractTests {
    /// The repository's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("every limit option of serve (--max-*, --*-timeout) is in PROTOCOL.md's table of limits, with its flag")
    func limitsDocumented() async throws {
        let help = try await runChordstore(["serve", "--help"])
        try #require(help.status == 0, "\(help.stderr)")
        let flags = help.stdout.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," })
            .map(String.init)
            .filter { $0.hasPrefix("--max-") || ($0.hasPrefix("--") && $0.hasSuffix("-timeout")) }
        #expect(Set(flags).isSuperset(of: ["--max-connections-per-address", "--max-buffered-bytes", "--handshake-timeout", "--frame-timeout"]))
        let protocolDoc = try String(contentsOf: Self.root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        let start = try #require(protocolDoc.range(of: "## 6. Limits")).upperBound
        let end = protocolDoc.range(of: "## 7.")?.lowerBound ?? protocolDoc.endIndex
        let section = protocolDoc[start..<end]
        for flag in Set(flags) {
            #expect(section.contains("`\(flag)"), "\(flag) is not in PROTOCOL.md §6")
        }
    }
}
