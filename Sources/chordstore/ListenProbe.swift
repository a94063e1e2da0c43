import Foundation
import NIOCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why `serve` could not listen, in words: which address, and the system's reason.
/// grpc-swift reports a port it could not bind as "serverIsStopped", and NIO's bind
/// error reads `bind(descriptor:ptr:bytes:): Address already in use)`; so each address
/// `serve` was given is tried again, alone, once serving has failed, and the first that
/// cannot be bound is named beside the error.
enum ListenProbe {
    /// The first of `addresses` (a name for the message, a host, a port; port 0 is
    /// skipped: any free one is taken) that cannot be bound now, with the reason.
    static func refusal(_ addresses: [(name: String, host: String, port: Int)]) -> String? {
        for address in addresses where address.port > 0 {
            if let reason = bindRefusal(host: address.host, port: address.port) {
                return "\(address.name) \(address.host):\(address.port): \(reason)"
            }
        }
        return nil
    }

    /// The error's words: an `IOError`'s system reason without NIO's decoration.
    static func describe(_ error: any Error) -> String {
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)) }
        return "\(error)"
    }

    /// The system's reason a listening socket on `host:port` cannot be bound, or `nil`.
    private static func bindRefusal(host: String, port: Int) -> String? {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let info = found else { return nil }
        defer { freeaddrinfo(found) }
        let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else { return String(cString: strerror(errno)) }
        return nil
    }
}
