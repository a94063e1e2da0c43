public import ChordStoreProto
public import NIOCore
import SwiftProtobuf

/// What a `Reply` frame carries in its `payload` field.
public enum ReplyPayload: Sendable, Hashable {
    /// No payload (an empty `bytes` field, left out).
    case none
    /// A serialized message.
    case bytes([UInt8])
    /// A payload message that holds one length-delimited field, `number` (1...15), with
    /// these bytes, written straight from them without building the message first:
    /// `CommandReply`'s `event` (field 1) given as a log record (an `EventEnvelope`), or
    /// `BackupChunk`'s `data` (field 3) given as a slice of a block of the copy.
    case field(_ number: UInt8, _ bytes: ArraySlice<UInt8>)

    /// The payload message's bytes, for a transport that frames messages itself (gRPC).
    public var serialized: [UInt8] {
        switch self {
        case .none: return []
        case .bytes(let bytes): return bytes
        case .field(let number, let bytes):
            var message: [UInt8] = []
            message.reserveCapacity(count)
            ReplyFrame.fieldHeader(number, count: bytes.count) { message.append($0) }
            message.append(contentsOf: bytes)
            return message
        }
    }

    /// The payload's size in bytes.
    public var count: Int {
        switch self {
        case .none: 0
        case .bytes(let bytes): bytes.count
        case .field(_, let bytes): 1 + ReplyFrame.varintSize(UInt64(bytes.count)) + bytes.count
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
        case .field(let number, let bytes):
            fieldHeader(number, count: bytes.count) { buffer.writeInteger($0) }
            buffer.writeBytes(bytes)
        }
    }

    /// Hands `byte` a length-delimited field's tag (one byte: fields 1...15), then its
    /// length as a varint.
    @inline(__always)
    static func fieldHeader(_ number: UInt8, count: Int, _ byte: (UInt8) -> Void) {
        precondition((1...15).contains(number), "a one-byte tag holds fields 1...15")
        byte(number << 3 | 2)
        varint(UInt64(count), byte)
    }

    /// The bytes a varint of `value` takes.
    static func varintSize(_ value: UInt64) -> Int {
        value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    private static func writeVarint(_ value: UInt64, into buffer: inout ByteBuffer) {
        varint(value) { buffer.writeInteger($0) }
    }

    /// Hands `byte` the bytes of `value` as a varint, low group first.
    @inline(__always)
    private static func varint(_ value: UInt64, _ byte: (UInt8) -> Void) {
        var value = value
        while value >= 0x80 {
            byte(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        byte(UInt8(value))
    }
}
