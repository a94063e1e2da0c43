import ChordStoreServer
import ServiceLifecycle

/// Refuses to run `service` when it would serve calls without authentication on an
/// address other than loopback (`host`; `nil`: calls need a credential, any host will do).
struct UnauthenticatedLoopbackCheck<Wrapped: Service>: Service {
    let service: Wrapped
    let host: String?

    func run() async throws {
        if let host { try HostAddress.checkUnauthenticated(host, "--http-host") }
        try await service.run()
    }
}
