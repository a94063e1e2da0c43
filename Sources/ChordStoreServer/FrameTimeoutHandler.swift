import ChordStoreWire
import NIOCore

/// Cuts off a client that sends a frame too slowly: it follows the frame boundaries of
/// the byte stream (length prefixes only) and, when one frame stays incomplete for
/// longer than the limit, raises a `WireError` that closes the connection. Bytes pass
/// through unchanged to the ``ChordStoreWire/FrameDecoder`` after it.
final class FrameTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private let description: String
    /// Length-prefix bytes seen of the current frame (0...3), and their value so far.
    private var headerBytes = 0
    private var header: UInt32 = 0
    /// Body bytes still to come of the current frame.
    private var remaining = 0
    /// Frames completed so far; the current frame's number.
    private var completed = 0
    /// The timer and the frame it watches.
    private var timer: (frame: Int, task: Scheduled<Void>)?

    init(timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        self.timeout = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        self.description = "\(timeout)"
    }

    private var isMidFrame: Bool { remaining > 0 || headerBytes > 0 }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var view = unwrapInboundIn(data).readableBytesView[...]
        while let first = view.first {
            if remaining > 0 {
                let take = min(remaining, view.count)
                remaining -= take
                view = view.dropFirst(take)
                if remaining == 0 { completed += 1 }
            } else {
                header = header << 8 | UInt32(first)
                view = view.dropFirst()
                headerBytes += 1
                if headerBytes == 4 {
                    remaining = Int(header)
                    headerBytes = 0
                    header = 0
                    if remaining == 0 { completed += 1 }
                }
            }
        }
        if !isMidFrame {
            cancelTimer()
        } else if timer?.frame != completed {
            cancelTimer()
            let frame = completed
            let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
            let task = context.eventLoop.scheduleTask(in: timeout) {
                let (handler, context) = bound.value
                guard handler.completed == frame, handler.isMidFrame else { return }
                handler.timer = nil
                context.fireErrorCaught(WireError(.deadlineExceeded, "a frame took longer than \(handler.description) to arrive"))
            }
            timer = (frame, task)
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) { cancelTimer() }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimer()
        context.fireChannelInactive()
    }

    private func cancelTimer() {
        timer?.task.cancel()
        timer = nil
    }
}
