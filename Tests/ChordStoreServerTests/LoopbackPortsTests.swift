@testable import ChordStoreClient
import Foundation
import Testing

/// Ports for servers whose addresses must be known before they listen.
@Suite("Loopback ports")
struct LoopbackPortsTests {
    @Test("distinct free ports below the ephemeral range, where outgoing connections cannot take them")
    func belowEphemeralRange() throws {
        let ports = try LoopbackPorts.free(8)
        #expect(Set(ports).count == 8)
        let range = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        if let low = range?.split(whereSeparator: \.isWhitespace).first.flatMap({ Int($0) }), low > 11_024 {
            #expect(ports.allSatisfy { $0 < low && $0 >= low - 10_000 }, "\(ports) against \(low)")
        }
    }
}

/// Ports claimed across processes (``PortClaims``): a test run and the `chordstore-check`
/// it starts draw from the same range.
@Suite("Port claims")
struct PortClaimsTests {
    @Test("a port one holder claimed is refused to another until the first releases it or closes the file")
    func claimsExclude() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ports-\(UUID().uuidString).lock").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var first = try #require(PortClaims(path: path))
        let second = try #require(PortClaims(path: path))
        #expect(first.claim(25_000))
        #expect(first.claim(25_000), "a claim held already is granted again")
        #expect(!second.claim(25_000))
        #expect(second.claim(25_001), "another port is free")
        #expect(!first.claim(25_001))
        first.release(25_000)
        #expect(second.claim(25_000))
        second.release(25_000)
        #expect(first.claim(25_000))
        first = try #require(PortClaims(path: path))  // the old one closes: its claims go
        #expect(second.claim(25_000))
    }

    @Test("LoopbackPorts never hands out a port in its range that another holder claimed")
    func freeSkipsClaimed() throws {
        let low = LoopbackPorts.ephemeralLow
        guard low > 11_024 else { return }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ports-\(UUID().uuidString).lock").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let other = try #require(PortClaims(path: path))
        let mine = try #require(PortClaims(path: path))
        // The other holder claims the whole range but for ten ports.
        let open = Set((low - 10_000)..<low).shuffled().prefix(10)
        for port in (low - 10_000)..<low where !open.contains(port) {
            #expect(other.claim(port))
        }
        let ports = try LoopbackPorts.free(3, claims: mine)
        #expect(Set(ports).count == 3)
        // One of the ten, or (when this process handed those out before, or they are
        // bound) one of the kernel's: never one the other holder claimed.
        #expect(ports.allSatisfy { open.contains($0) || $0 >= low }, "\(ports), open \(open.sorted())")
    }
}
