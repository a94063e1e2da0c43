import NIOCore
import NIOHTTP2

/// Sits before the HTTP/2 handler of a gRPC connection and ends the streams the client
/// resets itself, closing each one's stream channel (the server then sends its own
/// `RST_STREAM`, which the client ignores), instead of passing the client's reset to
/// swift-nio-http2, which would close the whole connection past 200 resets in 30 s
/// (``StreamResetScanner`` says why). Past ``ChordStoreWire/WireLimits/maxStreamResets``
/// resets within ``window``, resets pass to the HTTP/2 handler again, and its own
/// defence closes the connection with `GOAWAY ENHANCE_YOUR_CALM`: a flood of resets
/// still costs its client the connection.
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

    /// Registers a new stream's channel, until it closes.
    func track(_ stream: any Channel) throws {
        let id = try stream.syncOptions!.getOption(HTTP2StreamChannelOptions.streamID)
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
        for stream in output.resets { reset(stream) }
    }

    /// The client reset `stream`: its channel is closed (a stream that already ended has
    /// none), and the reset counts towards the limit.
    private func reset(_ stream: UInt32) {
        if rate.count(at: .now()) > maxResets { scanner.takesResets = false }  // from now on, NIO's own defence
        streams[HTTP2StreamID(Int32(truncatingIfNeeded: stream))]?.close(promise: nil)
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
            guard let parent = stream.parent else { return }
            try parent.pipeline.syncOperations.handler(type: StreamResetHandler.self).track(stream)
        }
    }
}

@available(*, unavailable)
extension StreamResetHandler: Sendable {}

/// Events of the last ``window`` (30 s), counted in 30 one-second buckets: what one
/// more event makes, in constant room whatever the rate.
struct ResetRate: Sendable {
    static let window = 30
    private var buckets = [Int](repeating: 0, count: window)
    /// The second (since the clock's start) of the newest bucket.
    private var newest: Int64 = 0

    /// Counts one event at `now`; returns the events of the window, this one included.
    mutating func count(at now: NIODeadline) -> Int {
        let second = now.uptimeNanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000).quotient
        let current = Int64(truncatingIfNeeded: second)
        let elapsed = current - newest
        if elapsed >= Int64(Self.window) {
            buckets = [Int](repeating: 0, count: Self.window)
        } else if elapsed > 0 {
            for step in 1...Int(elapsed) { buckets[Int((newest + Int64(step)) % Int64(Self.window))] = 0 }
        }
        newest = max(newest, current)
        buckets[Int(current % Int64(Self.window))] += 1
        return buckets.reduce(0, +)
    }
}
