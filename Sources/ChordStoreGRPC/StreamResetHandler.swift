import NIOCore
import NIOHTTP2

/// Sits before the HTTP/2 handler of a gRPC connection and ends the streams the client
/// resets itself, closing each one's stream channel (the server then sends its own
/// `RST_STREAM`, which the client ignores), instead of passing the client's reset to
/// swift-nio-http2, which would close the whole connection past 200 resets in 30 s
/// (``StreamResetScanner`` says why). While more than
/// ``ChordStoreWire/WireLimits/maxStreamResets`` resets came within the last 30 s,
/// resets pass to the HTTP/2 handler again, and its own defence closes the connection
/// with `GOAWAY ENHANCE_YOUR_CALM` at its 200th: a flood of resets still costs its
/// client the connection.
final class StreamResetHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var scanner = StreamResetScanner()
    private let maxResets: Int
    /// The resets of the last 30 s.
    private var rate = ResetRate()
    /// The open streams, by id (registered by ``track(_:)`` as each stream opens).
    private var streams: [HTTP2StreamID: any Channel] = [:]

    init(maxResets: Int) {
        self.maxResets = maxResets
    }

    /// Registers the channel of new stream `id`, until it closes.
    func track(_ stream: any Channel, id: HTTP2StreamID) {
        streams[id] = stream
        let bound = NIOLoopBound(self, eventLoop: stream.eventLoop)
        stream.closeFuture.whenComplete { _ in bound.value.streams[id] = nil }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let chunk = unwrapInboundIn(data)
        let output = chunk.withUnsafeReadableBytes { scanner.scan($0) }
        if output.pass == [.range(0..<chunk.readableBytes)] {
            context.fireChannelRead(data)  // nothing taken out: the chunk as it came
        } else {
            var passed = context.channel.allocator.buffer(capacity: chunk.readableBytes)
            for segment in output.pass {
                switch segment {
                case .held(let bytes): passed.writeBytes(bytes)
                case .range(let range):
                    if let slice = chunk.getSlice(at: chunk.readerIndex + range.lowerBound, length: range.count) { passed.writeImmutableBuffer(slice) }
                }
            }
            if passed.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(passed)) }
        }
        for reset in output.resets { self.reset(reset) }
    }

    /// The client reset a stream: taken out, its channel is closed (a stream that already
    /// ended has none). Every reset counts towards the limit, which decides whether the
    /// next ones are taken out.
    private func reset(_ reset: StreamResetScanner.Reset) {
        scanner.takesResets = rate.count(at: .now()) <= maxResets
        if reset.taken { streams[HTTP2StreamID(Int32(truncatingIfNeeded: reset.stream))]?.close(promise: nil) }
    }
}

extension StreamResetHandler {
    /// Puts a handler before the HTTP/2 handler of an accepted gRPC connection.
    static func install(on channel: any Channel, maxResets: Int) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            let http2 = try pipeline.handler(type: NIOHTTP2Handler.self)
            try pipeline.addHandler(StreamResetHandler(maxResets: maxResets), position: .before(http2))
        }
    }

    /// Registers a new stream of a connection that has a handler.
    static func track(_ stream: any Channel) -> EventLoopFuture<Void> {
        stream.eventLoop.makeCompletedFuture {
            guard let parent = stream.parent, let options = stream.syncOptions else { return }
            let id = try options.getOption(HTTP2StreamChannelOptions.streamID)
            try parent.pipeline.syncOperations.handler(type: StreamResetHandler.self).track(stream, id: id)
        }
    }
}

@available(*, unavailable)
extension StreamResetHandler: Sendable {}
