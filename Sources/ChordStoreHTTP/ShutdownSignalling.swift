import ChordStoreServer
import ServiceLifecycle

/// A service that fires `signal` when its graceful shutdown begins, so that work which
/// would otherwise hold the shutdown open (a stream of server-sent events) ends first.
struct ShutdownSignalling<Wrapped: Service>: Service {
    let service: Wrapped
    let signal: OneShotSignal

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await service.run()
        } onGracefulShutdown: {
            signal.fire()
        }
    }
}
