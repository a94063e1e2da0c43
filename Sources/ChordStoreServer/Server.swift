public import ChordStoreAPI
public import ChordStoreEngine
public import ChordStoreWire
public import Logging
public import NIOCore
import ChordStoreDomain
import ChordStoreProto
public import ChordStoreReplication
import NIOPosix
import NIOSSL
import Synchronization

/// The ChordStore TCP server: the framed protocol of `proto/chordstore/v1/rpc.proto`
/// over SwiftNIO, serving one ``ChordStoreEngine/ChordStore``.
///
/// ```swift
/// let server = Server(store: store, security: .loopbackOnly, logger: logger)
/// let address = try await server.start(host: "127.0.0.1", port: 7420)
/// // ...
/// await server.shutdown()   // stop accepting, let calls in flight finish, close
/// store.close()
/// ```
public final class Server: Sendable {
    private let dispatcher: ServiceDispatcher
    private let limits: WireLimits
    private let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    /// One inbox per event loop, for answers that other threads hand back.
    private let inboxes: [ObjectIdentifier: LoopInbox]
    private let activity: ServerActivity
    private let refusals: RefusalLog
    private let security: ServerSecurity
    private let authenticator: Authenticator
    private let metrics: ServerMetrics?
    /// Runs the calls of every transport.
    private let executor: CallExecutor
    private let state = Mutex(State())

    private struct State {
        var listener: (any Channel)?
        /// Ends the calls of revoked tokens as the tokens change.
        var revocations: Task<Void, Never>?
        var connections: [Int: any Channel] = [:]
        var nextConnection = 0
    }

    /// Creates a server for `store`; `node` names this node in `Health` replies,
    /// `replication` is its place in a cluster (`nil`: a lone server), `security` says
    /// who may call it and whether connections use TLS (docs/SECURITY.md), and `metrics`
    /// counts its calls (`nil`: nothing is counted).
    public init(
        store: ChordStore, limits: WireLimits = WireLimits(), node: String = "local", replication: ReplicationNode? = nil,
        security: ServerSecurity, logger: Logger, threads: Int = System.coreCount, metrics: ServerMetrics? = nil
    ) {
        self.metrics = metrics
        let authenticator = Authenticator(
            store: store, mode: security.authentication, logger: logger, guessing: security.guessing,
            localAdminCreated: security.localAdminCreated.map { Instant($0) })
        self.authenticator = authenticator
        self.security = security
        self.dispatcher = ServiceDispatcher(
            store: store, limits: limits, node: node, replication: replication, authenticator: authenticator.isEnabled ? authenticator : nil)
        self.limits = limits
        self.logger = logger
        self.activity = ServerActivity(limits: limits)
        self.refusals = RefusalLog(logger: logger)
        self.executor = CallExecutor(
            dispatcher: dispatcher, authenticator: authenticator, activity: activity, metrics: metrics, logger: logger, limits: limits)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, threads))
        self.group = group
        var inboxes: [ObjectIdentifier: LoopInbox] = [:]
        for loop in group.makeIterator() { inboxes[ObjectIdentifier(loop)] = LoopInbox(loop: loop) }
        self.inboxes = inboxes
        if authenticator.isEnabled {
            let calls = dispatcher.liveCalls
            state.withLock { $0.revocations = Task { await Self.endRevokedCalls(calls, store: store) } }
        }
    }

    /// Each time the tokens or stores change (here, or by replication), ends the calls
    /// of the tokens no longer live, whether or not those calls have anything to send;
    /// returns when the store closes or the task is cancelled.
    private static func endRevokedCalls(_ calls: LiveCalls, store: ChordStore) async {
        var version = store.accessVersion
        while !Task.isCancelled {
            await store.waitForAccessChange(after: version)
            let now = store.accessVersion
            guard now > version else { return }  // closed, or cancelled
            version = now
            calls.endRevoked()
        }
    }

    /// Binds and starts accepting connections; returns the bound address (port 0 picks a
    /// free port). Without authentication only a loopback address may be bound.
    public func start(host: String, port: Int) async throws -> SocketAddress {
        if !authenticator.isEnabled { try HostAddress.checkUnauthenticated(host, "--host") }
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: limits.maxStreamBacklog / 2, high: limits.maxStreamBacklog))
            .childChannelInitializer { [self] channel in initialize(channel) }
        let listener = try await bootstrap.bind(host: host, port: port).get()
        guard let address = listener.localAddress else {
            try? await listener.close()
            throw WireError(.internal, "the listener has no address")
        }
        if !authenticator.isEnabled {
            do {
                try HostAddress.checkUnauthenticated(bound: address, "--host \(host)")
            } catch {
                try? await listener.close()
                throw error
            }
        }
        state.withLock { $0.listener = listener }
        logger.info("listening", metadata: ["address": "\(address)"])
        return address
    }

    /// Stops accepting connections and drains: new calls are refused with `UNAVAILABLE`,
    /// clients' streams end at once with `UNAVAILABLE`, and the unary calls in flight get
    /// up to `grace` to finish (acknowledgements of replication are still taken, so quorum
    /// writes can complete). Then every connection gets a `GoAway` and is closed, and the
    /// event loops stop. Commands already handed to the store are committed by the
    /// store's own close. Each wait is woken by the last call's end, not polled.
    public func shutdown(grace: Duration = .seconds(10)) async {
        let listener = state.withLock { $0.listener }
        logger.notice("shutting down: draining", metadata: ["calls": "\(activity.callsInFlight)", "grace": "\(grace)"])
        try? await listener?.close()
        activity.startDraining()
        activity.drainStarted.fire()
        // Taken now: a connection accepted before the listener closed is among them.
        for connection in state.withLock({ Array($0.connections.values) }) {
            connection.pipeline.fireUserInboundEventTriggered(ConnectionEvent.endClientStreams)
        }
        // (The wait also ends early when this task is cancelled, a failed start say: warn
        // only of calls that are really still there.)
        if !(await activity.waitForCalls(streams: false, timeout: grace)), activity.callsInFlight > 0 {
            logger.warning("calls were still in flight when the grace period ended", metadata: [
                "calls": "\(activity.callsInFlight)", "grace": "\(grace)",
            ])
        }
        activity.graceOver.fire()  // the gRPC and HTTP endpoints' calls still running end now
        let goAway = Chordstore_V1_Frame.goAway(WireError(.unavailable, "the server is shutting down", reason: .shuttingDown))
        // Never wait on a client that does not read: write the GoAway without waiting,
        // then close (the close does not wait for the write either).
        for connection in state.withLock({ Array($0.connections.values) }) {
            var buffer = connection.allocator.buffer(capacity: 128)
            if (try? ReplyFrame.write(goAway, into: &buffer)) != nil {
                connection.writeAndFlush(buffer, promise: nil)
            }
            connection.close(promise: nil)
        }
        // Cancelled tasks hop back to their event loop when they end: let them, briefly,
        // before the loops stop.
        _ = await activity.waitForCalls(streams: true, timeout: .seconds(2))
        state.withLock { $0.revocations?.cancel() }
        try? await group.shutdownGracefully()
        logger.info("stopped")
    }

    /// The server's calls for the other transports (the gRPC endpoint, the HTTP
    /// endpoint's JSON calls): the path its own connections' calls take.
    package var callExecutor: CallExecutor { executor }

    /// Its place in a cluster (`nil`: a lone server).
    var replication: ReplicationNode? { dispatcher.replication }

    /// Whether the server is shutting down (it refuses new calls).
    public var isDraining: Bool { activity.isDraining }

    /// Server streams open now, by method (subscriptions, live queries, replication).
    public var streamsInFlight: [Method: Int] { activity.streamsInFlight }

    /// Connections open now.
    public var openConnections: Int { activity.openConnections }
    /// Calls in flight now, over all connections.
    public var callsInFlight: Int { activity.callsInFlight }
    /// Streams ended with `RESOURCE_EXHAUSTED` because their reader fell behind.
    public var slowReadersCut: Int { activity.slowReadersCut }
    /// Times a stream waited for its client to take what was sent (the channel was over
    /// its write buffer's high-water mark), woken when it drains.
    public var streamSocketWaits: Int { activity.streamSocketWaits }
    /// Request bytes that partial frames hold against the budget now.
    public var bufferedBytes: Int { activity.bufferedBytes }
    /// Calls refused for an invalid credential since the server started.
    public var failedAuthentications: UInt64 { authenticator.failedAuthentications }

    private func initialize(_ channel: any Channel) -> EventLoopFuture<Void> {
        let peer = ConnectionAdmission.key(for: channel.remoteAddress?.ipAddress ?? "unknown")
        let number = state.withLock { state -> Int in
            state.nextConnection += 1
            return state.nextConnection
        }
        switch activity.admitConnection(number, from: peer) {
        case .refused(let refusal):
            refusals.note(refusal, from: peer, limits: limits)
            return channel.close()
        case .admitted(let evicting):
            // Without authentication every connection is as good as proven.
            if !authenticator.isEnabled { activity.connectionAuthenticated(number) }
            let evicted = state.withLock { state -> (any Channel)? in
                state.connections[number] = channel
                return evicting.flatMap { state.connections[$0] }
            }
            evicted?.pipeline.fireUserInboundEventTriggered(ConnectionEvent.evict)
            // Evicted by a newer connection between its admission and its registration:
            // it was given no event to close on.
            if !activity.holdsConnection(number) { return channel.close() }
        }
        channel.closeFuture.whenComplete { [self] _ in
            state.withLock { _ = $0.connections.removeValue(forKey: number) }
            activity.connectionClosed(number)
            activity.trimmer.released()
        }
        let idle = TimeAmount.seconds(min(limits.idleTimeout.components.seconds, 365 * 86_400))
        let handler = ConnectionHandler(
            executor: executor, limits: limits, logger: logger, connection: number,
            inbox: inboxes[ObjectIdentifier(channel.eventLoop)] ?? LoopInbox(loop: channel.eventLoop))
        return channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            if let tls = security.tls { try pipeline.addHandler(NIOSSLServerHandler(context: tls.context)) }
            try pipeline.addHandler(IdleStateHandler(readTimeout: idle))
            try pipeline.addHandler(FrameReader(limits: limits, activity: activity))
            try pipeline.addHandler(handler)
        }
    }
}

/// What the server tells one of its connections (a user event through its pipeline).
enum ConnectionEvent {
    /// End the clients' streams now (replication streams go on until the connections close).
    case endClientStreams
    /// Close the connection: it showed no credential, and a new connection needs its slot.
    case evict
}
