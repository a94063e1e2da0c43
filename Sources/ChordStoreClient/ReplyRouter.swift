import ChordStoreProto
import ChordStoreWire
import NIOCore
import SwiftProtobuf
import Synchronization

/// Routes each `Reply` to the call it belongs to (by call id); ends every open call when
/// the connection closes.
final class ReplyRouter: Sendable {
    private struct State {
        var calls: [UInt64: AsyncThrowingStream<Chordstore_V1_Reply, any Error>.Continuation] = [:]
        var closed = false
        var goAway: Chordstore_V1_GoAway?
    }

    private let state = Mutex(State())

    /// Opens the reply sequence of `callID`.
    func open(_ callID: UInt64) -> AsyncThrowingStream<Chordstore_V1_Reply, any Error> {
        let (stream, continuation) = AsyncThrowingStream<Chordstore_V1_Reply, any Error>.makeStream()
        let closed = state.withLock { state -> Bool in
            if state.closed { return true }
            state.calls[callID] = continuation
            return false
        }
        if closed { continuation.finish() }
        return stream
    }

    func close(_ callID: UInt64) {
        let continuation = state.withLock { $0.calls.removeValue(forKey: callID) }
        continuation?.finish()
    }

    func deliver(_ reply: Chordstore_V1_Reply) {
        let continuation = state.withLock { $0.calls[reply.callID] }
        continuation?.yield(reply)
        if reply.hasStatus { close(reply.callID) }
    }

    func connectionClosed(goAway: Chordstore_V1_GoAway?) {
        let open = state.withLock { state -> [AsyncThrowingStream<Chordstore_V1_Reply, any Error>.Continuation] in
            state.closed = true
            if let goAway { state.goAway = goAway }
            defer { state.calls.removeAll() }
            return Array(state.calls.values)
        }
        for continuation in open { continuation.finish() }
    }

    var goAway: Chordstore_V1_GoAway? { state.withLock { $0.goAway } }
}

/// The client's channel handler: decodes frames and hands replies to the router.
final class ReplyHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let router: ReplyRouter
    private var goAway: Chordstore_V1_GoAway?

    init(router: ReplyRouter) { self.router = router }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let body = unwrapInboundIn(data)
        guard let frame = try? body.withUnsafeReadableBytes({ try Chordstore_V1_Frame(serializedBytes: $0.bytes) }) else {
            context.close(promise: nil)
            return
        }
        switch frame.kind {
        case .reply(let reply): router.deliver(reply)
        case .goAway(let goAway): self.goAway = goAway
        default: break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        router.connectionClosed(goAway: goAway)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
