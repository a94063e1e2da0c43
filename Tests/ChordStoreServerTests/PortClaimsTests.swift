@testable import ChordStoreClient
import Foundation
import Testing

#if os(Linux)  // elsewhere the locks are the process's: its instances do not exclude each other
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

    @Test("a symbolic link or a directory at the path is not opened")
    func onlyRegularFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ports-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let target = directory.appendingPathComponent("target")
        #expect(FileManager.default.createFile(atPath: target.path, contents: nil, attributes: [.posixPermissions: 0o600]))
        let link = directory.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        #expect(PortClaims(path: link.path) == nil)
        let permissions = try FileManager.default.attributesOfItem(atPath: target.path)[.posixPermissions] as? Int
        #expect(permissions == 0o600, "the link's target was left as it was")
        #expect(PortClaims(path: directory.path) == nil)
        #expect(PortClaims(path: target.path) != nil)
    }

    @Test("LoopbackPorts never hands out a port in its range that another holder claimed")
    func freeSkipsClaimed() throws {
        let low = LoopbackPorts.ephemeralLow
        guard low > 11_024 else { return }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ports-\(UUID().uuidString).lock").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let other = try #require(PortClaims(path: path))
        // The other holder claims the whole range but for ten ports.
        let open = Set((low - 10_000)..<low).shuffled().prefix(10)
        for port in (low - 10_000)..<low where !open.contains(port) {
            #expect(other.claim(port))
        }
        let ports = try LoopbackPorts.Pool(claims: PortClaims(path: path)).free(3)
        #expect(Set(ports).count == 3)
        // One of the ten, or (when they are bound) one of the kernel's: never one the
        // other holder claimed.
        #expect(ports.allSatisfy { open.contains($0) || $0 >= low }, "\(ports), open \(open.sorted())")
    }

    @Test("the ports LoopbackPorts hands out are claimed in the shared file while this process runs")
    func sharedFileClaimed() throws {
        let port = try LoopbackPorts.free(1)[0]
        guard port < LoopbackPorts.ephemeralLow else { return }  // one of the kernel's: not claimed
        let other = try #require(PortClaims(path: LoopbackPorts.claimsPath))
        let granted = other.claim(port)
        if granted { other.release(port) }
        #expect(!granted, "port \(port) was not claimed in \(LoopbackPorts.claimsPath)")
    }
}
#endif
