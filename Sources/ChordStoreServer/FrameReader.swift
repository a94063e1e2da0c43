import ChordStoreDomain
import ChordStoreWire
import NIOCore

/// The first handler of a connection's bytes: splits them into frames
/// (``FrameSplitter``, each length read once) and passes each frame's body on, enforcing
/// the limits that apply while a frame is incomplete:
/// - the frame size limit: a length over it is refused as soon as its 4 bytes arrive,
///   before any of the body is buffered;
/// - the handshake timeout: a new connection must complete its first frame in time;
/// - the frame timeout: a frame must arrive whole within it from its first byte;
/// - the buffered-bytes budget: a frame larger than ``WireLimits/budgetedFrameSize``
///   reserves its length from the server-wide budget when its prefix arrives, and gives
///   it back when it completes or its connection closes; one that does not fit is refused.
/// Each violation raises a `WireError` that the ``ConnectionHandler`` turns into a
/// `GoAway` and a close. While a frame is incomplete the idle timeout does not apply
/// (the frame timeout does), so the idle event is held back.
final class FrameReader: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let limits: WireLimits
    private let activity: ServerActivity
    private var splitter: FrameSplitter
    /// Budget bytes held by the frame in progress.
    private var reserved = 0
    /// The frame timer and the frame it watches.
    private var frameTimer: (frame: Int, task: Scheduled<Void>)?
    private var handshakeTimer: Scheduled<Void>?
    private var failed = false

    init(limits: WireLimits, activity: ServerActivity) {
        self.limits = limits
        self.activity = activity
        self.splitter = FrameSplitter(maxFrameSize: limits.maxFrameSize)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        handshakeTimer = context.eventLoop.scheduleTask(in: TimeAmount(limits.handshakeTimeout)) {
            let (handler, context) = bound.value
            guard handler.splitter.completed == 0 else { return }
            handler.fail(context, WireError(
                .deadlineExceeded, "no complete frame arrived within the handshake timeout of \(handler.limits.handshakeTimeout)"))
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        splitter.append(unwrapInboundIn(data))
        reading: while !failed {
            switch splitter.next() {
            case .frame(let body):
                releaseReservation()
                if let timer = handshakeTimer {
                    timer.cancel()
                    handshakeTimer = nil
                }
                context.fireChannelRead(wrapInboundOut(body))
            case .tooLarge(let length):
                fail(context, WireError(.resourceExhausted, "frame of \(length) bytes exceeds the limit of \(limits.maxFrameSize) bytes", reason: .frameTooLarge))
                return
            case .needMore(let length):
                if let length, length > WireLimits.budgetedFrameSize, reserved == 0 {
                    guard activity.reserveBuffered(length) else {
                        fail(context, WireError(
                            .resourceExhausted,
                            "a frame of \(length) bytes does not fit the server's budget of \(activity.maxBufferedBytes) bytes for partial frames; retry later"))
                        return
                    }
                    reserved = length
                }
                break reading
            }
        }
        guard !failed else { return }
        if !splitter.isMidFrame {
            cancelFrameTimer()
        } else if frameTimer?.frame != splitter.completed {
            cancelFrameTimer()
            let frame = splitter.completed
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            let task = context.eventLoop.scheduleTask(in: TimeAmount(limits.frameTimeout)) {
                let (handler, context) = bound.value
                guard handler.splitter.completed == frame, handler.splitter.isMidFrame else { return }
                handler.frameTimer = nil
                handler.fail(context, WireError(.deadlineExceeded, "a frame took longer than \(handler.limits.frameTimeout) to arrive"))
            }
            frameTimer = (frame, task)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case IdleStateHandler.IdleStateEvent.read = event, splitter.isMidFrame { return }
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
