import NIOCore

/// What the kernel knows of a TCP connection's outgoing bytes (Linux `TCP_INFO`): how
/// many the peer has acknowledged, and whether some wait to be sent or acknowledged.
/// Where it is not available, the server relies on its own write buffer alone.
struct SocketProgress: Sendable {
    /// Bytes the peer has acknowledged since the connection opened.
    var taken: UInt64
    /// Whether bytes wait in the socket: not yet sent (the peer's window is closed when it
    /// does not read) or sent and not yet acknowledged.
    var waiting: Bool

    /// Reads the progress of `channel`'s socket and calls `body` with it (`nil` where the
    /// kernel does not tell). On the channel's event loop, `body` runs before this returns.
    static func read(_ channel: any Channel, _ body: @escaping (SocketProgress?) -> Void) {
        #if os(Linux)
        guard let provider = channel as? any SocketOptionProvider else { return body(nil) }
        let future: EventLoopFuture<KernelTCPInfo> = provider.unsafeGetSocketOption(level: .tcp, name: .tcp_info)
        future.assumeIsolatedUnsafeUnchecked().whenComplete { result in
            body(try? result.get().progress)
        }
        #else
        body(nil)
        #endif
    }
}

#if os(Linux)
/// Linux's `struct tcp_info` as the kernel fills it (uapi `linux/tcp.h`, which grows only
/// at its end); Glibc's copy of the struct stops before the fields read here.
struct KernelTCPInfo: Sendable {
    private var words: (
        UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
        UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64
    ) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    init() {}

    /// `tcpi_unacked` (offset 24, segments), `tcpi_bytes_acked` (120) and
    /// `tcpi_notsent_bytes` (144, Linux 4.6 and later).
    var progress: SocketProgress {
        withUnsafeBytes(of: words) { bytes in
            let unacked = bytes.loadUnaligned(fromByteOffset: 24, as: UInt32.self)
            let acked = bytes.loadUnaligned(fromByteOffset: 120, as: UInt64.self)
            let unsent = bytes.loadUnaligned(fromByteOffset: 144, as: UInt32.self)
            return SocketProgress(taken: acked, waiting: unacked > 0 || unsent > 0)
        }
    }
}
#endif
