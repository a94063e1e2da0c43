import Foundation
public import Hummingbird
public import Logging
import NIOCore
import ChordStoreServer
public import ChordStoreWire
public import CoreMetrics
public import Prometheus
public import ServiceLifecycle

/// The server's HTTP endpoint (`serve --http-port`), built on Hummingbird:
/// - `GET /console/`: the web console (``ConsoleAssets``), a page over the JSON calls;
/// - `POST /api/<service>/<method>`: the registry's methods as JSON (``JSONGateway``),
///   with the same tokens and permissions as the protocol's port;
/// - `GET /metrics`: every metric of the node in Prometheus's text format;
/// - `GET /health/live`: 200 while the process serves HTTP at all;
/// - `GET /health/ready`: 200 when the node should take traffic, else 503, with a JSON
///   ``Readiness`` report saying why.
///
/// The metrics and health need no credential: bind the endpoint to loopback (the
/// default) or to a network that only the monitoring and the console's users reach. It
/// is one `Service` of the server's `ServiceGroup`.
public struct HTTPEndpoint: Sendable {
    /// The collector registry `/metrics` emits.
    public let registry: PrometheusCollectorRegistry
    /// The factory that records into ``registry``: give it to the engine
    /// (``ChordStoreEngine/ChordStore/Options/metrics``) and the server
    /// (``ChordStoreServer/ServerMetrics``).
    public let factory: any MetricsFactory

    /// An endpoint with a registry of its own, every metric described (`# HELP`), and
    /// histogram buckets suited to calls (50 µs … 10 s) and commit batches (1 … 1,024
    /// events).
    public init() {
        let registry = PrometheusCollectorRegistry()
        self.registry = registry
        self.factory = DescribedMetricsFactory(
            registry: registry,
            durationBuckets: [
                .microseconds(50), .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1),
                .milliseconds(2) + .microseconds(500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
                .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2_500), .seconds(5), .seconds(10),
            ],
            valueBuckets: ["chordstore_commit_events": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1_024]])
    }

    /// What a client of the JSON calls may make the endpoint hold.
    public struct CallLimits: Sendable {
        /// The framed port's limits, which the JSON calls share: `maxFrameSize` is the
        /// largest request body and `frameTimeout` the time it may take to arrive;
        /// `maxConnections` and `maxConnectionsPerAddress` bound the streams
        /// (server-sent events) open at once, in all and from one address; a stream's
        /// write may wait `slowReaderTimeout` for a client that does not read before
        /// its connection is closed.
        public var wire: WireLimits
        /// How long an idle stream waits before a keep-alive comment (which also finds
        /// a client that went away).
        public var keepAlive: Duration = .seconds(15)
        /// How long unary calls in flight may go on once the endpoint shuts down.
        public var grace: Duration = .seconds(10)

        /// The limits of `wire`, a keep-alive every 15 s and a grace of 10 s.
        public init(wire: WireLimits = WireLimits()) {
            self.wire = wire
        }
    }

    /// The endpoint as a service serving `node` on `host:port` (port 0 picks one);
    /// `onListening` gets the bound address.
    public func service(
        node: NodeReadings, host: String, port: Int, policy: Readiness.Policy = Readiness.Policy(),
        callLimits: CallLimits = CallLimits(), logger: Logger,
        onListening: @escaping @Sendable (SocketAddress) -> Void = { _ in }
    ) -> some Service {
        let router = Router(context: EndpointRequestContext.self)
        let (shutdown, graceOver) = (OneShotSignal(), OneShotSignal())
        let gateway = JSONGateway(executor: node.server.callExecutor, limits: callLimits, shutdown: shutdown, graceOver: graceOver)
        router.post("api/:service/:method") { request, context -> Response in
            let name = "\(context.parameters.get("service") ?? "")/\(context.parameters.get("method") ?? "")"
            return await gateway.call(name, request, context)
        }
        for method in [HTTPRequest.Method.get, .put, .delete, .patch] {
            router.on("api/:service/:method", method: method) { _, _ in JSONGateway.wrongMethod() }
        }
        ConsoleAssets.register(on: router)
        let sampler = MetricsSampler(node: node, factory: factory)
        let registry = self.registry
        router.get("metrics") { _, _ -> Response in
            sampler.sample()
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        router.get("health/live") { _, _ -> Response in
            Self.json(.ok, encoding: ["status": "live"])
        }
        router.get("health/ready") { _, _ -> Response in
            let readiness = Readiness(node.observation(), policy: policy)
            return Self.json(readiness.isReady ? .ok : .serviceUnavailable, encoding: readiness)
        }
        let application = Application(
            router: router,
            // A connection that sends nothing (a half-sent request included) is closed.
            server: .http1(configuration: .init(idleTimeout: .seconds(30))),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "chordstore"),
            onServerRunning: { channel in
                if let address = channel.localAddress { onListening(address) }
            },
            logger: logger)
        return EndpointService(
            application, executor: node.server.callExecutor, host: host, shutdown: shutdown, graceOver: graceOver, grace: callLimits.grace)
    }

    /// A JSON answer of `value`, its keys in snake case.
    private static func json(_ status: HTTPResponse.Status, encoding value: some Encodable) -> Response {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys]
        var body = (try? encoder.encode(value)) ?? Data("{}".utf8)
        body.append(UInt8(ascii: "\n"))
        return json(status, ByteBuffer(bytes: body))
    }

    /// A JSON answer: `body`, never cached.
    static func json(_ status: HTTPResponse.Status, _ body: ByteBuffer) -> Response {
        Response(status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"], body: ResponseBody(byteBuffer: body))
    }
}
