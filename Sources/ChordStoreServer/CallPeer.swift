/// Where a call's connection comes from: its IP address and port, as every transport
/// knows them (the framed port's channel, gRPC's peer string, the HTTP request's remote
/// address).
package struct CallPeer: Sendable, Hashable, CustomStringConvertible {
    /// The IP address (empty when unknown).
    package let address: String
    /// The port (0 when unknown).
    package let port: Int
    /// The session of a call that names none (docs/PROTOCOL.md §5), on every transport:
    /// `connection-` and the peer, the same for every call of one connection and
    /// different for connections open at the same time; on the framed port followed by
    /// `-` and the connection's number since the server started, so that a later
    /// connection from the same address and port (a port the client's system hands out
    /// again, a NAT's) never takes over an earlier one's undo history. gRPC and HTTP do
    /// not tell this server their connections: a client that undoes over them names its
    /// session. Made once per peer, not per call.
    package let defaultSession: String

    /// The peer at `address` and `port`, on the connection numbered `connection` when
    /// the transport tells it.
    package init(address: String, port: Int, connection: Int? = nil) {
        self.address = address
        self.port = port
        self.defaultSession = "connection-\(Self.shown(address, port))" + (connection.map { "-\($0)" } ?? "")
    }

    /// The peer gRPC names in `ServerContext.remotePeer` (`ipv4:10.0.0.7:53122`,
    /// `ipv6:[::1]:53122`); unknown for anything else.
    package init(grpcPeer peer: String) {
        if peer.hasPrefix("ipv4:") {
            let rest = peer.dropFirst(5)
            let colon = rest.lastIndex(of: ":")
            self.init(address: String(rest[..<(colon ?? rest.endIndex)]), port: colon.flatMap { Int(rest[rest.index(after: $0)...]) } ?? 0)
        } else if peer.hasPrefix("ipv6:"), let open = peer.firstIndex(of: "["), let close = peer.firstIndex(of: "]") {
            let port = peer[peer.index(after: close)...].dropFirst()  // after "]:"
            self.init(address: String(peer[peer.index(after: open)..<close]), port: Int(port) ?? 0)
        } else {
            self.init(address: "", port: 0)
        }
    }

    /// `10.0.0.7:53122`, `[::1]:53122`.
    package var description: String { Self.shown(address, port) }

    /// `address` and `port` as written in a URL (an IPv6 address in brackets).
    private static func shown(_ address: String, _ port: Int) -> String {
        address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)"
    }
}
