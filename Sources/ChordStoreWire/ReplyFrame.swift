public import ChordStoreProto
public import NIOCore
import SwiftProtobuf

/// What a `Reply` frame carries in its `payload` field.
public enum ReplyPayload: Sendable, Hashable {
    /// No payload (an empty `bytes` field, left out).
    case none
    /// A serialized message.
    case bytes([UInt8])
    /// A serialized message that is field 1 of the payload message: `CommandReply`'s
    /// `event`, given as a log record (an `EventEnvelope`), sent without encoding it again.
    case field1([UInt8])

    /// The payload message's bytes, for a transport that frames messages itself (gRPC).
    public var serialized: [UInt8] {
        if case .bytes(let bytes) = self { return bytes }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(count)
        ReplyFrame.write(self, into: &buffer)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    /// The payload's size in bytes.
    public var count: Int {
        switch self {
        case .none: 0
        case .bytes(let bytes): bytes.count
        case .field1(let message): 1 + ReplyFrame.varintSize(UInt64(message.count)) + message.count
        }
    }
}

/// Writes whole frames straight into an outbound buffer: the 4-byte big-endian length,
/// then the `chordstore.v1.Frame`, encoded by hand for a `Reply` (the frame a server sends
/// most), so a reply's payload is copied once, into the socket's buffer. The bytes are
/// what SwiftProtobuf writes for the same message (fields in number order, default
/// values left out); the tests decode them with SwiftProtobuf.
public enum ReplyFrame {
    /// Appends a framed `Frame { reply { call_id, payload, status } }` to `buffer`;
    /// `status` ends the call (`nil`: a stream message).
    public static func write(
        callID: UInt64, payload: ReplyPayload, status: Chordstore_V1_Status?, into buffer: inout ByteBuffer
    ) throws {
        let statusBytes: [UInt8]? = try status.map { $0 == .ok ? [] : try $0.serializedBytes() }
        let payloadCount = payload.count
        var reply = 0
        if callID != 0 { reply += 1 + varintSize(callID) }
        if payloadCount > 0 { reply += 1 + varintSize(UInt64(payloadCount)) + payloadCount }
        if let statusBytes { reply += 1 + varintSize(UInt64(statusBytes.count)) + statusBytes.count }
        let frame = 1 + varintSize(UInt64(reply)) + reply
        buffer.reserveCapacity(minimumWritableBytes: 4 + frame)
        buffer.writeInteger(UInt32(frame), endianness: .big)
        buffer.writeInteger(UInt8(0x1A))  // Frame.reply, field 3, length-delimited
        writeVarint(UInt64(reply), into: &buffer)
        if callID != 0 {
            buffer.writeInteger(UInt8(0x08))  // Reply.call_id, field 1, varint
            writeVarint(callID, into: &buffer)
        }
        if payloadCount > 0 {
            buffer.writeInteger(UInt8(0x12))  // Reply.payload, field 2, length-delimited
            writeVarint(UInt64(payloadCount), into: &buffer)
            write(payload, into: &buffer)
        }
        if let statusBytes {
            buffer.writeInteger(UInt8(0x1A))  // Reply.status, field 3, length-delimited
            writeVarint(UInt64(statusBytes.count), into: &buffer)
            buffer.writeBytes(statusBytes)
        }
    }

    /// Appends any frame, framed (the length, then the body): for the rare frames that
    /// are not replies (`GoAway`).
    public static func write(_ frame: Chordstore_V1_Frame, into buffer: inout ByteBuffer) throws {
        let body: [UInt8] = try frame.serializedBytes()
        buffer.reserveCapacity(minimumWritableBytes: 4 + body.count)
        buffer.writeInteger(UInt32(body.count), endianness: .big)
        buffer.writeBytes(body)
    }

    /// Appends the payload's message bytes (``ReplyPayload/count`` of them).
    static func write(_ payload: ReplyPayload, into buffer: inout ByteBuffer) {
        switch payload {
        case .none: break
        case .bytes(let bytes): buffer.writeBytes(bytes)
        case .field1(let message):
            buffer.writeInteger(UInt8(0x0A))  // field 1, length-delimited
            writeVarint(UInt64(message.count), into: &buffer)
            buffer.writeBytes(message)
        }
    }

    /// The bytes a varint of `value` takes.
    static func varintSize(_ value: UInt64) -> Int {
        value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    private static func writeVarint(_ value: UInt64, into buffer: inout ByteBuffer) {
        var value = value
        while value >= 0x80 {
            buffer.writeInteger(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        buffer.writeInteger(UInt8(value))
    }
}
