import ChordStoreWire
import NIOCore
import NIOPosix
import NIOSSL
#if canImport(Network)
import Network
import NIOTransportServices
#endif

/// How a client connection is opened. On Apple platforms, through Network.framework
/// (swift-nio-transport-services): the system's networking (Wi-Fi to cellular, VPNs,
/// proxies) and, when the TLS settings name no CA file and no client certificate, the
/// system's TLS and trust store. Elsewhere (Linux), and for a connection from a given
/// local address (a cluster member's), NIOPosix with swift-nio-ssl. The framing above
/// the transport is the same.
enum ConnectionBootstrap {
    /// A channel connected to `host:port`, its pipeline ready for ``ReplyHandler``.
    static func connect(
        host: String, port: Int, from localAddress: String?, tls: ClientTLS?, maxFrameSize: Int, router: ReplyRouter,
        connectTimeout: Duration
    ) async throws -> any Channel {
        let timeout = TimeAmount.nanoseconds(Int64(connectTimeout / .nanoseconds(1)))
        #if canImport(Network)
        if localAddress == nil {
            var bootstrap = NIOTSConnectionBootstrap(group: NIOTSEventLoopGroup.singleton).connectTimeout(timeout)
            let inPipeline: ClientTLS?
            if let tls, tls.usesSystemTrust {
                bootstrap = bootstrap.tlsOptions(NWProtocolTLS.Options())
                inPipeline = nil
            } else {
                inPipeline = tls
            }
            return try await bootstrap
                .channelInitializer { channel in initialize(channel, host: host, tls: inPipeline, maxFrameSize: maxFrameSize, router: router) }
                .connect(host: host, port: port).get()
        }
        #endif
        // Every connection of the process shares NIO's event loops: a member's periodic
        // calls to its peers do not start (and stop) a thread each.
        var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        if let localAddress { bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: localAddress, port: 0)) }
        return try await bootstrap
            .connectTimeout(timeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in initialize(channel, host: host, tls: tls, maxFrameSize: maxFrameSize, router: router) }
            .connect(host: host, port: port).get()
    }

    /// The connection's pipeline: TLS (swift-nio-ssl) when asked, the frame codec, the
    /// reply handler.
    private static func initialize(
        _ channel: any Channel, host: String, tls: ClientTLS?, maxFrameSize: Int, router: ReplyRouter
    ) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            if let tls {
                // A certificate names a DNS host by name; an IP address is checked against
                // the connection's peer address.
                let serverHostname = (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
                try pipeline.addHandler(try NIOSSLClientHandler(context: tls.context, serverHostname: serverHostname))
            }
            try pipeline.addHandler(ByteToMessageHandler(FrameDecoder(maxFrameSize: maxFrameSize)))
            try pipeline.addHandler(MessageToByteHandler(FrameEncoder()))
            try pipeline.addHandler(ReplyHandler(router: router))
        }
    }
}
