package import ChordStoreServer
package import ChordStoreWire
import GRPCCore
import GRPCNIOTransportHTTP2
package import Logging
public import ServiceLifecycle

/// The standard gRPC endpoint (`serve --grpc-port`, docs/PROTOCOL.md "The gRPC
/// endpoint"): the services of proto/ over HTTP/2 with grpc-swift 2, so that any gRPC
/// tool or generated stub can call the server. Every method runs through the server's
/// ``ChordStoreServer/CallExecutor`` (the same registry, credentials and limits as the
/// framed protocol); the replication methods stay on the framed port. It also serves
/// gRPC's health and server reflection services.
///
/// ```swift
/// let endpoint = GRPCEndpoint(executor: server.callExecutor, host: "127.0.0.1", port: 7430, limits: limits, logger: logger)
/// services.append(.init(service: endpoint.service { address in print("gRPC on \(address)") }))
/// ```
public struct GRPCEndpoint: Sendable {
    /// TLS for the endpoint: the server's certificate and key (PEM files); with a client
    /// authority, only clients that show a certificate it issued are served.
    public struct TLSFiles: Sendable {
        /// The server's certificate chain (PEM).
        public var certificateFile: String
        /// The private key of the certificate (PEM).
        public var keyFile: String
        /// Mutual TLS: the authority (PEM) whose certificates clients must show.
        public var clientCAFile: String?

        /// TLS with `certificateFile` and `keyFile`; mutual TLS with `clientCAFile`.
        public init(certificateFile: String, keyFile: String, clientCAFile: String? = nil) {
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.clientCAFile = clientCAFile
        }
    }

    let executor: CallExecutor
    let host: String
    let port: Int
    let tls: TLSFiles?
    let limits: WireLimits
    let grace: Duration
    let logger: Logger

    /// An endpoint serving `executor`'s methods on `host:port` (port 0 picks one), with TLS
    /// if given; a request may be as large as `limits.maxFrameSize` and take
    /// `limits.frameTimeout` to arrive, a connection may carry
    /// `limits.maxCallsPerConnection` calls at once and is closed after
    /// `limits.idleTimeout` without one; at shutdown, calls get `grace` to finish.
    package init(
        executor: CallExecutor, host: String, port: Int, tls: TLSFiles? = nil, limits: WireLimits, grace: Duration = .seconds(10), logger: Logger
    ) {
        self.executor = executor
        self.host = host
        self.port = port
        self.tls = tls
        self.limits = limits
        self.grace = grace
        self.logger = logger
    }

    /// The endpoint as a service of the server's `ServiceGroup`: `onListening` gets the
    /// bound `HOST:PORT`. When the server drains (or the endpoint shuts down) it takes no
    /// new call and ends its streams with `UNAVAILABLE`; unary calls in flight get the
    /// grace period, then end with `UNAVAILABLE` (``ChordStoreServer/EndpointService``).
    public func service(onListening: @escaping @Sendable (String) -> Void = { _ in }) -> some Service {
        let (shutdown, graceOver) = (OneShotSignal(), OneShotSignal())
        return EndpointService(
            GRPCServerService(endpoint: self, shutdown: shutdown, graceOver: graceOver, onListening: onListening),
            executor: executor, host: host, shutdown: shutdown, graceOver: graceOver, grace: grace)
    }

    var transportSecurity: HTTP2ServerTransport.Posix.TransportSecurity {
        guard let tls else { return .plaintext }
        let chain: [TLSConfig.CertificateSource] = [.file(path: tls.certificateFile, format: .pem)]
        let key = TLSConfig.PrivateKeySource.file(path: tls.keyFile, format: .pem)
        guard let clientCA = tls.clientCAFile else { return .tls(certificateChain: chain, privateKey: key) }
        return .mTLS(certificateChain: chain, privateKey: key) { config in
            config.trustRoots = .certificates([.file(path: clientCA, format: .pem)])
            config.clientCertificateVerification = .noHostnameVerification
        }
    }

    var address: GRPCNIOTransportCore.SocketAddress {
        host.contains(":") ? .ipv6(host: host, port: port) : .ipv4(host: host == "localhost" ? "127.0.0.1" : host, port: port)
    }
}

/// Runs a `GRPCServer` until the group shuts down.
private struct GRPCServerService: Service {
    let endpoint: GRPCEndpoint
    /// Fired when streams must end; `graceOver`, when unary calls must.
    let shutdown: OneShotSignal
    let graceOver: OneShotSignal
    let onListening: @Sendable (String) -> Void

    func run() async throws {
        var config = HTTP2ServerTransport.Posix.Config.defaults
        config.rpc.maxRequestPayloadSize = endpoint.limits.maxFrameSize
        config.http2.maxConcurrentStreams = endpoint.limits.maxCallsPerConnection
        config.connection.maxIdleTime = endpoint.limits.idleTimeout
        // The calls end at the server's own grace (EndpointService): by the time this
        // transport shuts down none is left, and it need not wait for clients to close
        // their connections after its GOAWAY.
        config.connection.maxGraceTime = .milliseconds(250)
        // A client's reset of a stream (its cancel of a call) ends that stream only, up to
        // the endpoint's own limit (StreamResetHandler).
        let maxResets = endpoint.limits.maxStreamResets
        config.channelDebuggingCallbacks.onAcceptTCPConnection = { StreamResetHandler.install(on: $0, maxResets: maxResets) }
        config.channelDebuggingCallbacks.onAcceptHTTP2Stream = { StreamResetHandler.track($0) }
        let server = GRPCServer(
            transport: .http2NIOPosix(address: endpoint.address, transportSecurity: endpoint.transportSecurity, config: config),
            services: [
                RegistryService(executor: endpoint.executor, shutdown: shutdown, graceOver: graceOver, requestTimeout: endpoint.limits.frameTimeout),
                HealthService(executor: endpoint.executor, shutdown: shutdown),
                ReflectionService(),
            ])
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try await server.serve() }
                if let address = try await server.listeningAddress?.ipv4 {
                    onListening("\(address.host):\(address.port)")
                } else if let address = try await server.listeningAddress?.ipv6 {
                    onListening("[\(address.host)]:\(address.port)")
                }
            }
        } onGracefulShutdown: {
            server.beginGracefulShutdown()
        }
    }
}
