import ChordStoreDomain
import ChordStoreWire
import NIOCore
import NIOTestUtils
import Testing
import TestSupport

@Suite("Frame decoder")
struct FrameDecoderTests {
    private func frame(_ body: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt32(body.count), endianness: .big)
        buffer.writeBytes(body)
        return buffer
    }

    @Test("frames split at every byte boundary and batched together decode to the same bodies")
    func verifier() async throws {
        try await onOwnThread {
            let bodies: [[UInt8]] = [[], [1], Array(0..<200), Array(repeating: 7, count: 3_000)]
            let pairs = bodies.map { (frame($0), [ByteBuffer(bytes: $0)]) }
            try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: pairs) {
                FrameDecoder(maxFrameSize: 1 << 20)
            }
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

    @Test("a \"length\" that is the start of an HTTP or TLS message says so; a plain large one does not")
    func otherProtocols() throws {
        func refusal(_ bytes: [UInt8]) throws -> String {
            var decoder = FrameDecoder()
            var buffer = ByteBuffer(bytes: bytes)
            do {
                _ = try decoder.decode(buffer: &buffer)
                return ""
            } catch let error as WireError {
                return error.message
            }
        }
        #expect(try refusal(Array("HTTP/1.1 400 Bad Request\r\n".utf8)).contains("\"HTTP\": the peer speaks HTTP, not the ChordStore protocol"))
        #expect(try refusal(Array("GET / HTTP/1.1\r\n".utf8)).contains("\"GET \": the peer speaks HTTP"))
        #expect(try refusal([0x16, 0x03, 0x01, 0x02, 0x00]).contains("a TLS record"))
        #expect(try refusal([0x15, 0x03, 0x03, 0x00, 0x02]).contains("a TLS record"))
        let plain = try refusal([0x7F, 0xFF, 0xFF, 0xFF])
        #expect(plain.contains("exceeds the limit") && !plain.contains("("), "\(plain)")
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
