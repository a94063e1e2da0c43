import ChordStoreDomain
public import NIOCore

/// Splits a byte stream into frame bodies: a 4-byte big-endian length N, then N bytes.
///
/// A length above `maxFrameSize` is refused as soon as its 4 bytes arrive, before any of
/// the body is buffered; the error closes the connection (after a `GoAway`). The body is
/// a slice of the read buffer (no copy).
public struct FrameDecoder: NIOSingleStepByteToMessageDecoder {
    public typealias InboundOut = ByteBuffer

    /// The largest frame body accepted, in bytes.
    public let maxFrameSize: Int

    /// Creates a decoder refusing frames larger than `maxFrameSize` bytes.
    public init(maxFrameSize: Int = WireLimits.defaultMaxFrameSize) {
        self.maxFrameSize = maxFrameSize
    }

    public mutating func decode(buffer: inout ByteBuffer) throws -> ByteBuffer? {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: UInt32.self) else {
            return nil
        }
        guard length <= maxFrameSize else {
            throw WireError(.resourceExhausted, "frame of \(length) bytes exceeds the limit of \(maxFrameSize) bytes\(Self.otherProtocol(length))", reason: .frameTooLarge)
        }
        guard buffer.readableBytes >= 4 + Int(length) else { return nil }
        buffer.moveReaderIndex(forwardBy: 4)
        return buffer.readSlice(length: Int(length))
    }

    /// A hint when a "length" is the start of another protocol's message (an HTTP
    /// request or answer, TLS): the peer is on the wrong port, or speaks something else.
    static func otherProtocol(_ length: UInt32) -> String {
        let bytes = withUnsafeBytes(of: length.bigEndian) { Array($0) }
        if (bytes[0] == 0x15 || bytes[0] == 0x16) && bytes[1] == 0x03 {
            return " (its first bytes are a TLS record: the peer uses TLS and this side does not)"
        }
        guard bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return "" }
        let text = String(decoding: bytes, as: UTF8.self)
        guard ["HTTP", "GET ", "POST", "PUT ", "HEAD", "PRI "].contains(text) else { return "" }
        return " (its first bytes are \"\(text)\": the peer speaks HTTP, not the ChordStore protocol; is this the right port?)"
    }

    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> ByteBuffer? {
        if let frame = try decode(buffer: &buffer) { return frame }
        if buffer.readableBytes > 0 {
            throw WireError(.invalidArgument, "connection closed inside a frame (\(buffer.readableBytes) bytes left over)")
        }
        return nil
    }
}

/// Writes a frame: the 4-byte big-endian length, then the body.
public struct FrameEncoder: MessageToByteEncoder {
    public typealias OutboundIn = ByteBuffer

    /// Creates an encoder.
    public init() {}

    public func encode(data: ByteBuffer, out: inout ByteBuffer) throws {
        out.reserveCapacity(minimumWritableBytes: 4 + data.readableBytes)
        out.writeInteger(UInt32(data.readableBytes), endianness: .big)
        out.writeImmutableBuffer(data)
    }
}
