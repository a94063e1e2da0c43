import ChordStoreDomain
import ChordStoreWire
import NIOCore
import NIOTestUtils
import Testing

@Suite("Frame decoder")
struct FrameDecoderTests {
    private func frame(_ body: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.count), endianness: .big)
        buffer.writeBytes(body)
        return buffer
    }

    @Test("frames split at every byte boundary and batched together decode to the same bodies")
    func verifier() throws {
        let bodies: [[UInt8]] = [[], [1], Array(0..<200), Array(repeating: 7, count: 3_000)]
        let pairs = bodies.map { (frame($0), [ByteBuffer(bytes: $0)]) }
        try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: pairs) {
            FrameDecoder(maxFrameSize: 1 << 20)
        }
    }

    @Test("a length prefix over the limit is refused as soon as its 4 bytes arrive")
    func tooLargeBeforeAllocating() throws {
        var decoder = FrameDecoder(maxFrameSize: 1_000)
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(1_001), endianness: .big)
        do {
            _ = try decoder.decode(buffer: &buffer)
            Issue.record("a 1,001-byte frame was accepted with a 1,000-byte limit")
        } catch let error as WireError {
            #expect(error.code == .resourceExhausted)
            #expect(error.message.contains("1001 bytes exceeds the limit of 1000"))
        }
        var exact = frame(Array(repeating: 1, count: 1_000))
        #expect(try decoder.decode(buffer: &exact)?.readableBytes == 1_000)
        var huge = ByteBuffer()
        huge.writeInteger(UInt32.max, endianness: .big)
        #expect(throws: WireError.self) { _ = try decoder.decode(buffer: &huge) }
    }

    @Test("end of stream inside a frame is reported as a truncated frame")
    func truncated() throws {
        var decoder = FrameDecoder()
        var partial = frame([1, 2, 3, 4])
        partial.moveWriterIndex(to: partial.writerIndex - 1)
        #expect(try decoder.decode(buffer: &partial) == nil)
        #expect(throws: WireError.self) { _ = try decoder.decodeLast(buffer: &partial, seenEOF: true) }
    }

    @Test("the encoder writes the length prefix the decoder reads")
    func roundTrip() throws {
        var out = ByteBuffer()
        try FrameEncoder().encode(data: ByteBuffer(bytes: [9, 8, 7]), out: &out)
        #expect(Array(out.readableBytesView) == [0, 0, 0, 3, 9, 8, 7])
        var decoder = FrameDecoder()
        #expect(try decoder.decode(buffer: &out) == ByteBuffer(bytes: [9, 8, 7]))
    }
}
