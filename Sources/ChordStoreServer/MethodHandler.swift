package import ChordStoreWire
import Foundation

/// How the server runs one method of the service, with what answers it. Every method has
/// exactly one in ``ServiceDispatcher/registry``: adding a method is adding its entry.
package enum MethodHandler: Sendable {
    /// Pages of a server stream: `emit` sends them (waiting while the client is slow).
    /// Each message is a ``ReplyPayload``: most are serialized messages (`.bytes`), a
    /// backup's data chunks are slices of the copy's blocks written into the frame as
    /// they are (`.field`).
    package typealias Emit = ([ReplyPayload]) async throws(WireError) -> Void

    /// A change of the call's store: its request is parsed on the event loop, and the
    /// call is answered once the change is as durable as it asks (``ServiceDispatcher/command(_:_:)``).
    case command(@Sendable (ServiceDispatcher, RequestPayload) throws -> ParsedCommand)
    /// One short snapshot read, answered on the connection's event loop (unless the call
    /// waits for a `min_sequence`).
    case pointRead(@Sendable (ServiceDispatcher, RequestPayload, CallContext) throws -> [UInt8])
    /// A unary call that reads no store and never waits (a follower's acknowledgement):
    /// on the framed port answered at once on the connection's event loop, as a point
    /// read is, without a task (unless the call waits for a `min_sequence`); the gRPC and
    /// JSON endpoints run it in their tasks, as every call.
    case inline(@Sendable (ServiceDispatcher, RequestPayload, CallContext) throws -> [UInt8])
    /// Any other unary call, run as a task.
    case unary(@Sendable (ServiceDispatcher, RequestPayload, CallContext) async throws -> [UInt8])
    /// A server-streaming call; ends when the closure returns (OK) or throws (its status).
    /// `isDraining` turns true when the server shuts down.
    case serverStream(@Sendable (ServiceDispatcher, RequestPayload, CallContext, _ isDraining: @escaping @Sendable () -> Bool, Emit) async throws(WireError) -> Void)

    /// Whether the server answers with a stream of messages.
    package var isStream: Bool {
        if case .serverStream = self { return true }
        return false
    }

    /// Whether it is a change of the call's store.
    package var isCommand: Bool {
        if case .command = self { return true }
        return false
    }
}
