public import ServiceLifecycle

/// Runs an endpoint beside the framed port (gRPC, HTTP) as the framed port runs:
/// - without authentication (`--auth none`) it starts only on a loopback host
///   (docs/SECURITY.md): it serves every method to whoever reaches it;
/// - its calls end as the framed port's do (docs/PROTOCOL.md §9, §10): `shutdown` fires
///   when the server starts draining (streams end with `UNAVAILABLE`), and `graceOver`
///   when the server's grace period ends (unary calls still running end with
///   `UNAVAILABLE`), or, whichever comes first, at the endpoint's own graceful shutdown
///   and `grace` after it. So every call has ended by the time the framed port has
///   drained, and the endpoint then stops at once.
public struct EndpointService<Wrapped: Service>: Service {
    let service: Wrapped
    let executor: CallExecutor
    let host: String
    let shutdown: OneShotSignal
    let graceOver: OneShotSignal
    let grace: Duration

    /// Runs `service`, which serves `executor`'s calls on `host`, firing `shutdown` and
    /// `graceOver` with `executor`'s server, or with its own graceful shutdown and `grace`
    /// after it.
    package init(
        _ service: Wrapped, executor: CallExecutor, host: String, shutdown: OneShotSignal, graceOver: OneShotSignal, grace: Duration
    ) {
        self.service = service
        self.executor = executor
        self.host = host
        self.shutdown = shutdown
        self.graceOver = graceOver
        self.grace = grace
    }

    /// Checks the host, then runs the endpoint until it stops.
    public func run() async throws {
        if !executor.requiresCredentials { try HostAddress.checkUnauthenticated(host, "the endpoint's host") }
        let (shutdown, graceOver, grace, server) = (self.shutdown, self.graceOver, self.grace, executor)
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    await shutdown.wait()
                    try? await Task.sleep(for: grace)
                    if !Task.isCancelled { graceOver.fire() }
                }
                group.addTask {
                    await server.drainStarted.wait()
                    if !Task.isCancelled { shutdown.fire() }
                }
                group.addTask {
                    await server.graceOver.wait()
                    if !Task.isCancelled { graceOver.fire() }
                }
                try await service.run()
                group.cancelAll()  // the waits, when the service ended before they did
            }
        } onGracefulShutdown: {
            shutdown.fire()
        }
    }
}
