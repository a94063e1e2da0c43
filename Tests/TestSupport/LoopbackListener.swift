import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A listening socket on 127.0.0.1. Left alone, it accepts nothing: it holds a port so
/// that a server under test cannot bind it. Closed when released.
public final class LoopbackListener: @unchecked Sendable {
    /// The socket.
    public let fd: Int32
    /// The port it listens on (the one given, or the one the kernel chose for 0).
    public let port: Int

    /// Listens on 127.0.0.1:`port` (0: any free port) with room for `backlog` pending
    /// connections; throws if the port is taken.
    public init(port: Int = 0, backlog: Int32 = 1) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawClientError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, backlog) == 0 else {
            let error = errno
            close(fd)
            throw RawClientError("cannot listen on 127.0.0.1:\(port): errno \(error)")
        }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Stops listening: a thread blocked in `accept` on ``fd`` returns.
    public func shutDown() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    deinit { close(fd) }
}
