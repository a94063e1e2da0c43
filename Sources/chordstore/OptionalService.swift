import ChordStoreServer
import Logging
import ServiceLifecycle

/// A service the server can do without: one that fails before it starts (`started`
/// never fired: the HTTP endpoint's default port is taken) is logged as a warning, and
/// the server goes on without it until it shuts down. Once started, its failure is the
/// server's, as for any other service.
struct OptionalService<Wrapped: Service>: Service {
    let service: Wrapped
    let started: OneShotSignal
    let logger: Logger
    /// What the service is, for the warning.
    let what: String

    init(_ service: Wrapped, started: OneShotSignal, logger: Logger, what: String) {
        self.service = service
        self.started = started
        self.logger = logger
        self.what = what
    }

    func run() async throws {
        do {
            try await service.run()
        } catch where !started.hasFired {
            logger.warning("not serving \(what): \(error); choose a port with --http-port, or none")
            try await gracefulShutdown()
        }
    }
}
