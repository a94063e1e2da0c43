import ChordStoreWire
#if canImport(Glibc)
import Glibc
#endif

/// Free TCP ports on 127.0.0.1, for tests and tools that start servers whose addresses
/// must be known before they listen (cluster members name each other).
public enum LoopbackPorts {
    /// `count` distinct ports that were free a moment ago (bound to port 0 together, then
    /// released; another process could take one in between).
    public static func free(_ count: Int) throws(ClientError) -> [Int] {
        var sockets: [Int32] = []
        defer { for socket in sockets { close(socket) } }
        var ports: [Int] = []
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw ClientError(.unavailable, "cannot open a socket") }
            sockets.append(fd)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            guard bound else { throw ClientError(.unavailable, "cannot bind a socket to 127.0.0.1") }
            ports.append(Int(UInt16(bigEndian: address.sin_port)))
        }
        return ports
    }
}
