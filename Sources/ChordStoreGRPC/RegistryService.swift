import ChordStoreAPI
import ChordStoreDomain
import ChordStoreServer
import ChordStoreWire
import Foundation
import GRPCCore

/// The `chordstore.v1.ChordStore` service over gRPC: one handler per method of the
/// method table, each passing the request's bytes to the server's
/// ``ChordStoreServer/CallExecutor`` (the path of every transport's calls), and its
/// reply's bytes back. Adding a method to the table adds it here.
struct RegistryService: RegistrableRPCService {
    let executor: CallExecutor
    /// Fired when streams must end (the server drains); `graceOver`, when unary calls
    /// still running must (its grace period is over).
    let shutdown: OneShotSignal
    let graceOver: OneShotSignal
    /// How long a client has to send its whole request (the framed port's frame timeout).
    let requestTimeout: Duration

    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        for method in Method.allCases {  // member-only methods too: refused with UNIMPLEMENTED and its reason
            router.registerHandler(forMethod: MethodDescriptor(method), deserializer: RawMessageCoder(), serializer: RawMessageCoder()) { [self] request, context in
                await handle(method, request, context)
            }
        }
    }

    private func handle(
        _ method: Method, _ request: StreamingServerRequest<[UInt8]>, _ context: ServerContext
    ) async -> StreamingServerResponse<[UInt8]> {
        let started = ContinuousClock.now
        let (executor, shutdown, graceOver) = (self.executor, self.shutdown, self.graceOver)
        let peer = CallPeer(grpcPeer: context.remotePeer)
        let call: GRPCCallMetadata
        do {
            call = try GRPCCallMetadata(request.metadata)
        } catch {
            return StreamingServerResponse(error: RPCError(wire: error))
        }
        // Who calls, and may they: before the request is read.
        let admitted: CallExecutor.Call
        do {
            admitted = try await executor.admit(method, metadata: call.fields, store: call.store, minSequence: call.minSequence, peer: peer)
        } catch {
            return StreamingServerResponse(error: RPCError(wire: error))
        }
        let payload: Data
        do {
            payload = try await CallBounds(timeout: requestTimeout).runCancellable { () async throws(WireError) -> Data in
                try await Self.onlyMessage(of: request, method)
            }
        } catch {
            return StreamingServerResponse(error: RPCError(wire: error))
        }
        let timeout = CallBounds.timeout(in: request.metadata)
        guard admitted.isStream else {
            do {
                let reply = try await CallBounds(timeout: timeout, shutdown: graceOver, started: started).runCancellable {
                    () async throws(WireError) -> [UInt8] in
                    try await executor.unary(admitted, payload: .bytes(payload))
                }
                return StreamingServerResponse(single: ServerResponse(message: reply))
            } catch {
                return StreamingServerResponse(error: RPCError(wire: error))
            }
        }
        return StreamingServerResponse { writer in
            do throws(WireError) {
                try await CallBounds(timeout: timeout, shutdown: shutdown, started: started).runCancellable { () async throws(WireError) in
                    try await executor.stream(admitted, payload: .bytes(payload)) { page throws(WireError) in
                        do {
                            try await writer.write(contentsOf: page.map(\.serialized))
                        } catch {
                            throw WireError(.cancelled, "the client went away")
                        }
                    }
                }
            } catch {
                throw RPCError(wire: error)
            }
            return [:]
        }
    }

    /// The call's one request message: `INVALID_ARGUMENT` if there is none or more (a
    /// request past the size limit never gets here: the transport resets its stream).
    private static func onlyMessage(of request: StreamingServerRequest<[UInt8]>, _ method: Method) async throws(WireError) -> Data {
        var message: [UInt8]?
        do {
            for try await next in request.messages {
                guard message == nil else { throw WireError(.invalidArgument, "\(method.rawValue) takes one request message, not several") }
                message = next
            }
        } catch let error as WireError {
            throw error
        } catch let error as RPCError {
            throw WireError(rpc: error)
        } catch {
            throw WireError(.invalidArgument, "cannot read the request: \(error)")
        }
        guard let message else { throw WireError(.invalidArgument, "\(method.rawValue) takes one request message; none came") }
        return Data(message)
    }
}
