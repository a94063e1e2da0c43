import ChordStoreServer
import GRPCCore
import SwiftProtobuf

/// gRPC's standard health service (`grpc.health.v1.Health/Check`), for load balancers
/// and `grpc_health_probe`: SERVING while the server takes calls, NOT_SERVING once it
/// shuts down; service "" is the whole server, "chordstore.v1.ChordStore" the service;
/// any other is NOT_FOUND. It needs no credential and says nothing of the data.
/// `Watch` is not served (UNIMPLEMENTED), which the protocol allows a client to expect.
struct HealthService: RegistrableRPCService {
    let executor: CallExecutor
    let shutdown: OneShotSignal

    static let services: Set<String> = ["", "chordstore.v1.ChordStore"]

    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        let (executor, shutdown) = (self.executor, self.shutdown)
        router.registerHandler(
            forMethod: MethodDescriptor(fullyQualifiedService: "grpc.health.v1.Health", method: "Check"),
            deserializer: RawMessageCoder(), serializer: RawMessageCoder()
        ) { request, _ in
            let check: Grpc_Health_V1_HealthCheckRequest
            do {
                var bytes: [UInt8]?
                for try await message in request.messages { bytes = message }
                check = try Grpc_Health_V1_HealthCheckRequest(serializedBytes: bytes ?? [])
            } catch {
                return StreamingServerResponse(error: RPCError(code: .invalidArgument, message: "not a HealthCheckRequest: \(error)"))
            }
            guard Self.services.contains(check.service) else {
                return StreamingServerResponse(error: RPCError(code: .notFound, message: "unknown service '\(check.service)'"))
            }
            let serving = !shutdown.hasFired && !executor.isDraining
            let reply = Grpc_Health_V1_HealthCheckResponse.with { $0.status = serving ? .serving : .notServing }
            do {
                return StreamingServerResponse(single: ServerResponse(message: try reply.serializedBytes()))
            } catch {
                return StreamingServerResponse(error: RPCError(code: .internalError, message: "\(error)"))
            }
        }
    }
}
