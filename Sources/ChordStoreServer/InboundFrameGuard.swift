import ChordStoreWire
import NIOCore

/// Enforces the limits that apply to a client's bytes before they form frames, ahead of
/// the ``ChordStoreWire/FrameDecoder``, which receives them unchanged:
/// - the handshake timeout: a new connection must complete its first frame in time;
/// - the frame timeout: a frame must arrive whole within it from its first byte;
/// - the buffered-bytes budget: a frame larger than ``WireLimits/budgetedFrameSize``
///   reserves its length from the server-wide budget when its prefix arrives, and gives
///   it back when it completes or its connection closes; one that does not fit is refused.
/// Each violation raises a `WireError` that the ``ConnectionHandler`` turns into a
/// `GoAway` and a close. While a frame is incomplete the idle timeout does not apply
/// (the frame timeout does), so the idle event is held back.
final class InboundFrameGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let limits: WireLimits
    private let activity: ServerActivity
    private var tracker = FrameTracker()
    /// Budget bytes held by the frame in progress.
    private var reserved = 0
    /// The frame timer and the frame it watches.
    private var frameTimer: (frame: Int, task: Scheduled<Void>)?
    private var handshakeTimer: Scheduled<Void>?
    private var failed = false

    init(limits: WireLimits, activity: ServerActivity) {
        self.limits = limits
        self.activity = activity
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        handshakeTimer = context.eventLoop.scheduleTask(in: TimeAmount(limits.handshakeTimeout)) {
            let (handler, context) = bound.value
            guard handler.tracker.completed == 0 else { return }
            handler.fail(context, WireError(
                .deadlineExceeded, "no complete frame arrived within the handshake timeout of \(handler.limits.handshakeTimeout)"))
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var view = unwrapInboundIn(data).readableBytesView
        reading: while true {
            switch tracker.next(&view) {
            case .started(let length):
                // Frames over the size limit are the decoder's to refuse, with its message.
                guard length > WireLimits.budgetedFrameSize, length <= limits.maxFrameSize else { continue }
                guard activity.reserveBuffered(length) else {
                    fail(context, WireError(
                        .resourceExhausted,
                        "a frame of \(length) bytes does not fit the server's budget of \(activity.maxBufferedBytes) bytes for partial frames; retry later"))
                    return
                }
                reserved = length
            case .completed:
                releaseReservation()
                handshakeTimer?.cancel()
                handshakeTimer = nil
            case .exhausted:
                break reading
            }
        }
        if !tracker.isMidFrame {
            cancelFrameTimer()
        } else if frameTimer?.frame != tracker.completed {
            cancelFrameTimer()
            let frame = tracker.completed
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            let task = context.eventLoop.scheduleTask(in: TimeAmount(limits.frameTimeout)) {
                let (handler, context) = bound.value
                guard handler.tracker.completed == frame, handler.tracker.isMidFrame else { return }
                handler.frameTimer = nil
                handler.fail(context, WireError(.deadlineExceeded, "a frame took longer than \(handler.limits.frameTimeout) to arrive"))
            }
            frameTimer = (frame, task)
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case IdleStateHandler.IdleStateEvent.read = event, tracker.isMidFrame { return }
        context.fireUserInboundEventTriggered(event)
    }

    func handlerRemoved(context: ChannelHandlerContext) { stop() }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    private func fail(_ context: ChannelHandlerContext, _ error: WireError) {
        guard !failed else { return }
        failed = true
        stop()
        context.fireErrorCaught(error)
    }

    private func stop() {
        cancelFrameTimer()
        handshakeTimer?.cancel()
        handshakeTimer = nil
        releaseReservation()
    }

    private func releaseReservation() {
        if reserved > 0 { activity.releaseBuffered(reserved) }
        reserved = 0
    }

    private func cancelFrameTimer() {
        frameTimer?.task.cancel()
        frameTimer = nil
    }
}
