import ChordStoreClient
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
