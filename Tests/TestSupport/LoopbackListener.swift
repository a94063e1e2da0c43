import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A listening socket on 127.0.0.1 that accepts nothing: it holds a port so that a
/// server under test cannot bind it. Closed when released.
public final class LoopbackListener: @unchecked Sendable {
    /// The socket.
    public let fd: Int32

    /// Listens on 127.0.0.1:`port`; throws if the port is taken.
    public init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawClientError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 1) == 0 else {
            let error = errno
            close(fd)
            throw RawClientError("cannot listen on 127.0.0.1:\(port): errno \(error)")
        }
    }

    deinit { close(fd) }
}
