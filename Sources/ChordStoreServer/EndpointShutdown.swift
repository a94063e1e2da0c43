public import ServiceLifecycle

/// Runs an endpoint beside the framed port (gRPC, HTTP) so that its calls end as the
/// framed port's do (docs/PROTOCOL.md §9, §10): `shutdown` fires when the server starts
/// draining (its streams end with `UNAVAILABLE`), and `graceOver` when the server's grace
/// period ends (its unary calls still running end with `UNAVAILABLE`), whichever of the
/// server's drain and the endpoint's own graceful shutdown comes first. So every call
/// has ended by the time the framed port has drained, and the endpoint then stops at
/// once.
public struct EndpointShutdown<Wrapped: Service>: Service {
    let service: Wrapped
    let runner: CallRunner
    let shutdown: OneShotSignal
    let graceOver: OneShotSignal
    let grace: Duration

    /// Runs `service`, firing `shutdown` and `graceOver` with `runner`'s server, or with
    /// its own graceful shutdown and `grace` after it.
    public init(_ service: Wrapped, runner: CallRunner, shutdown: OneShotSignal, graceOver: OneShotSignal, grace: Duration) {
        self.service = service
        self.runner = runner
        self.shutdown = shutdown
        self.graceOver = graceOver
        self.grace = grace
    }

    public func run() async throws {
        let (shutdown, graceOver, grace, server) = (self.shutdown, self.graceOver, self.grace, runner)
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    await shutdown.wait()
                    try? await Task.sleep(for: grace)
                    graceOver.fire()
                }
                group.addTask {
                    await server.drainStarted.wait()
                    shutdown.fire()
                }
                group.addTask {
                    await server.graceOver.wait()
                    graceOver.fire()
                }
                try await service.run()
                group.cancelAll()  // the waits, when the service ended before they did
            }
        } onGracefulShutdown: {
            shutdown.fire()
        }
    }
}
