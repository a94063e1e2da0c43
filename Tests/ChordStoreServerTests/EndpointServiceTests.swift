import ChordStoreEngine
@testable import ChordStoreServer
import ChordStoreWire
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// The gRPC and HTTP endpoints' start check: without authentication an endpoint starts
/// only on a loopback host (issue 39, defect 1), checked as it starts, not only by the
/// CLI's validation.
@Suite("Endpoint service")
struct EndpointServiceTests {
    /// A stand-in endpoint that records whether it was started.
    final class Recording: Service {
        private let ran = Atomic(false)
        var started: Bool { ran.load(ordering: .relaxed) }
        func run() async throws { ran.store(true, ordering: .relaxed) }
    }

    static func executor(tokens: Bool) -> CallExecutor {
        let store = ChordStore.inMemory()
        let logger = Logger(label: "test")
        let limits = WireLimits()
        let authenticator = Authenticator(
            store: store, mode: tokens ? .tokens(localAdmin: "local-admin-token-0123456789abcdef", clusterSecret: nil) : .none, logger: logger)
        let dispatcher = ServiceDispatcher(store: store, limits: limits, node: "test", authenticator: authenticator.isEnabled ? authenticator : nil)
        return CallExecutor(
            dispatcher: dispatcher, authenticator: authenticator, activity: ServerActivity(limits: limits), metrics: nil, logger: logger, limits: limits)
    }

    static func endpoint(_ service: Recording, host: String, tokens: Bool) -> EndpointService<Recording> {
        EndpointService(
            service, executor: executor(tokens: tokens), host: host, shutdown: OneShotSignal(), graceOver: OneShotSignal(), grace: .seconds(1))
    }

    @Test("without authentication an endpoint on a host other than loopback is refused before it starts", arguments: ["0.0.0.0", "192.0.2.1", "::", "db.example"])
    func unauthenticatedOffLoopbackRefused(_ host: String) async throws {
        let service = Recording()
        await #expect(throws: WireError.self) { try await Self.endpoint(service, host: host, tokens: false).run() }
        #expect(!service.started, "the endpoint started on \(host) with --auth none")
    }

    @Test("without authentication an endpoint on loopback starts; with tokens any host starts", arguments: [("127.0.0.1", false), ("::1", false), ("localhost", false), ("0.0.0.0", true)])
    func allowedHostsStart(_ host: String, _ tokens: Bool) async throws {
        let service = Recording()
        try await Self.endpoint(service, host: host, tokens: tokens).run()
        #expect(service.started)
    }
}
