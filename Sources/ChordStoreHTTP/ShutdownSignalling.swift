import ChordStoreServer
import ServiceLifecycle

/// A service that fires `signal` when its graceful shutdown begins, so that work which
/// would otherwise hold the shutdown open (a stream of server-sent events) ends first,
/// and `graceOver` once `grace` has passed since, for the calls still running then.
struct ShutdownSignalling<Wrapped: Service>: Service {
    let service: Wrapped
    let signal: OneShotSignal
    let graceOver: OneShotSignal
    let grace: Duration

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    await signal.wait()
                    try? await Task.sleep(for: grace)
                    graceOver.fire()
                }
                try await service.run()
                group.cancelAll()  // the timer, when the service ended before it fired
            }
        } onGracefulShutdown: {
            signal.fire()
        }
    }
}
