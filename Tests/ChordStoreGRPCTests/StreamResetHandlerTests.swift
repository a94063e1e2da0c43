@testable import ChordStoreGRPC
import NIOCore
import NIOEmbedded
import NIOHTTP2
import Testing

/// The handler ahead of a gRPC connection's HTTP/2 handler, on an `EmbeddedChannel`:
/// what reaches the HTTP/2 handler, which stream channels it closes, and its limit.
@Suite("HTTP/2 stream reset handler")
struct StreamResetHandlerTests {
    /// Collects what passes the handler (where the HTTP/2 handler sits).
    final class Received: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        var bytes: [UInt8] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            bytes += Array(buffer: unwrapInboundIn(data))
        }
    }

    static func reset(_ stream: UInt32) -> [UInt8] { StreamResetScannerTests.frame(type: 0x3, stream: stream, payload: [0, 0, 0, 8]) }

    @Test("a client's reset closes its stream's channel and never reaches the HTTP/2 handler; past the limit, resets pass again and no channel is closed")
    func resetsCloseStreams() throws {
        let handler = StreamResetHandler(maxResets: 2)
        let received = Received()
        let connection = EmbeddedChannel(handlers: [handler, received])
        let streams = (1...4).map { _ in EmbeddedChannel() }
        for (index, stream) in streams.enumerated() {
            try stream.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
            handler.track(stream, id: HTTP2StreamID(index * 2 + 1))
        }
        let data = StreamResetScannerTests.frame(type: 0x0, stream: 1, payload: [1, 2, 3])
        var bytes = ByteBuffer(bytes: StreamResetScannerTests.preface + data + Self.reset(1) + Self.reset(99) + Self.reset(3))
        try connection.writeInbound(bytes)
        #expect(received.bytes == StreamResetScannerTests.preface + data, "the resets were taken out")
        #expect(!streams[0].isActive && !streams[1].isActive, "streams 1 and 3 were closed")
        #expect(streams[2].isActive && streams[3].isActive)
        // Three resets in the window (one of a stream that had ended): past the limit of 2,
        // the next passes to the HTTP/2 handler, whose own defence counts it.
        bytes = ByteBuffer(bytes: Self.reset(5))
        try connection.writeInbound(bytes)
        #expect(received.bytes.suffix(13) == Self.reset(5)[...], "passed on")
        #expect(streams[2].isActive, "left to the HTTP/2 handler")
        _ = try connection.finish()
    }
}
