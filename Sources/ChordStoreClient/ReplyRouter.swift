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
        /// Replies delivered to a call and not yet consumed by its stream.
        var buffered: [UInt64: Int] = [:]
        /// Whether reading from the socket is paused because a stream is behind.
        var paused = false
        var closed = false
        var goAway: Chordstore_V1_GoAway?
        /// The error that closed the connection (a TLS handshake's, say), if any.
        var failure: String?
    }

    /// Undelivered replies of one stream beyond which the socket is not read.
    static let highWater = 256
    /// Reading resumes when every stream is below this.
    static let lowWater = 64

    private let state = Mutex(State())
    /// Pauses (`false`) and resumes (`true`) reading from the socket.
    private let reading = Mutex<(@Sendable (Bool) -> Void)?>(nil)

    /// Sets how the router pauses and resumes reading (once the channel exists).
    func setReading(_ control: @escaping @Sendable (Bool) -> Void) {
        reading.withLock { $0 = control }
    }

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
        let (continuation, resume) = state.withLock { state -> (AsyncThrowingStream<Chordstore_V1_Reply, any Error>.Continuation?, Bool) in
            state.buffered[callID] = nil
            return (state.calls.removeValue(forKey: callID), Self.shouldResume(&state))
        }
        continuation?.finish()
        if resume { setReading(true) }
    }

    func deliver(_ reply: Chordstore_V1_Reply) {
        let (continuation, pause) = state.withLock { state -> (AsyncThrowingStream<Chordstore_V1_Reply, any Error>.Continuation?, Bool) in
            guard let continuation = state.calls[reply.callID] else { return (nil, false) }
            let count = (state.buffered[reply.callID] ?? 0) + 1
            state.buffered[reply.callID] = count
            guard count > Self.highWater, !state.paused else { return (continuation, false) }
            state.paused = true
            return (continuation, true)
        }
        continuation?.yield(reply)
        if pause { setReading(false) }
        if reply.hasStatus {
            // The call is over: its replies stay in its stream, the slot is freed.
            let resume = state.withLock { state -> Bool in
                state.calls[reply.callID] = nil
                state.buffered[reply.callID] = nil
                return Self.shouldResume(&state)
            }
            continuation?.finish()
            if resume { setReading(true) }
        }
    }

    /// A stream took one reply of `callID`.
    func consumed(_ callID: UInt64) {
        let resume = state.withLock { state -> Bool in
            if let count = state.buffered[callID] { state.buffered[callID] = max(0, count - 1) }
            return Self.shouldResume(&state)
        }
        if resume { setReading(true) }
    }

    private static func shouldResume(_ state: inout State) -> Bool {
        guard state.paused, state.buffered.values.allSatisfy({ $0 < lowWater }) else { return false }
        state.paused = false
        return true
    }

    private func setReading(_ on: Bool) {
        reading.withLock { $0 }?(on)
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

    /// Notes the error that closes the connection.
    func failed(_ error: any Error) {
        state.withLock { if $0.failure == nil { $0.failure = "\(error)" } }
    }

    /// Why the connection closed, for a person: the error or the server's GoAway.
    var closeReason: String? {
        state.withLock { state in state.failure ?? state.goAway.map { "the server sent GoAway: \($0.status.message)" } }
    }
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
        router.failed(error)
        context.close(promise: nil)
    }
}
