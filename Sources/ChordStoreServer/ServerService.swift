public import NIOCore
public import ServiceLifecycle

/// The listener as a `Service` of a `ServiceGroup`: ``run()`` binds the server and serves
/// until the group shuts down gracefully (SIGTERM or SIGINT), then drains it (see
/// ``Server/shutdown(grace:)``).
///
/// ```swift
/// let group = ServiceGroup(configuration: .init(
///     services: [StoreService(store), ServerService(server, host: "127.0.0.1", port: 7420)],
///     gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
/// try await group.run()
/// ```
public struct ServerService: Service {
    private let server: Server
    private let host: String
    private let port: Int
    private let grace: Duration
    private let onListening: @Sendable (SocketAddress) -> Void

    /// Serves `server` on `host:port`; `onListening` gets the bound address (port 0 picks
    /// one); `grace` bounds the drain at shutdown.
    public init(
        _ server: Server, host: String, port: Int, grace: Duration = .seconds(10),
        onListening: @escaping @Sendable (SocketAddress) -> Void = { _ in }
    ) {
        self.server = server
        self.host = host
        self.port = port
        self.grace = grace
        self.onListening = onListening
    }

    /// Binds, serves until graceful shutdown (or cancellation), then drains and closes.
    /// Throws if the address cannot be bound.
    public func run() async throws {
        let address: SocketAddress
        do {
            address = try await server.start(host: host, port: port)
        } catch {
            await server.shutdown(grace: .zero)
            throw error
        }
        onListening(address)
        // Cancelled (another service failed) or asked to stop: drain either way.
        try? await gracefulShutdown()
        await server.shutdown(grace: Task.isCancelled ? .zero : grace)
    }
}
