import ChordStoreDomain
import ChordStoreProto
import ChordStoreWire
import Foundation
import NIOCore
import SwiftProtobuf
import Testing

@Suite("Reply frames encoded by hand")
struct ReplyFrameTests {
    /// Splits `buffer` into its framed bodies, checking each length prefix.
    private func frames(_ buffer: ByteBuffer) throws -> [Chordstore_V1_Frame] {
        var buffer = buffer
        var frames: [Chordstore_V1_Frame] = []
        while buffer.readableBytes > 0 {
            let length = buffer.readInteger(endianness: .big, as: UInt32.self)
            let body = length.flatMap { buffer.readBytes(length: Int($0)) }
            guard let body else {
                Issue.record("a frame is cut short")
                return frames
            }
            frames.append(try Chordstore_V1_Frame(serializedBytes: body))
        }
        return frames
    }

    private static let statuses: [Chordstore_V1_Status?] = [
        nil, .ok,
        .init(WireError(.notFound, "no chordset has id x")),
        .init(WireError(.failedPrecondition, "not the leader", leader: "10.0.0.2:7420")),
    ]

    @Test("every shape of reply decodes with SwiftProtobuf to the frame it stands for, byte for byte", arguments: statuses)
    func matchesSwiftProtobuf(status: Chordstore_V1_Status?) throws {
        let callIDs: [UInt64] = [0, 1, 127, 128, 300, 1 << 35, .max]
        let messages: [[UInt8]] = [[], [0x08, 0x01], Array(repeating: 0xAB, count: 127), Array(repeating: 0x5A, count: 20_000)]
        for callID in callIDs {
            for message in messages {
                // A field's bytes as a slice from inside a larger array, as a backup's
                // chunk is a slice of the copy's block.
                let block = [0xEE] + message + [0xEE]
                let slice = block[1..<(block.count - 1)]
                for payload in [ReplyPayload.none, .bytes(message), .field(1, message[...]), .field(3, slice), .field(15, slice)] {
                    var buffer = ByteBuffer()
                    try ReplyFrame.write(callID: callID, payload: payload, status: status, into: &buffer)
                    let bytes = Self.bytes(of: payload)
                    let expected = Chordstore_V1_Frame.reply(callID: callID, payload: bytes.isEmpty ? nil : bytes, status: status)
                    let decoded = try frames(buffer)
                    #expect(decoded == [expected])
                    // The same bytes SwiftProtobuf writes, so no client can tell the two apart.
                    let body = buffer.getBytes(at: 4, length: buffer.readableBytes - 4)
                    #expect(body == (try expected.serializedBytes() as [UInt8]))
                }
            }
        }
    }

    /// The payload's bytes, built apart from ``ReplyFrame``: a field payload is its tag
    /// (the field's number shifted left by 3, or 2), the length as a varint, then the bytes.
    private static func bytes(of payload: ReplyPayload) -> [UInt8] {
        switch payload {
        case .none: return []
        case .bytes(let bytes): return bytes
        case .field(let number, let message):
            var out: [UInt8] = [number << 3 | 2]
            var length = UInt64(message.count)
            while length >= 0x80 {
                out.append(UInt8(truncatingIfNeeded: length) | 0x80)
                length >>= 7
            }
            out.append(UInt8(length))
            return out + Array(message)
        }
    }

    @Test("a field-1 payload is the CommandReply whose event is the given envelope")
    func field1IsCommandReply() throws {
        var envelope = Chordstore_V1_EventEnvelope()
        envelope.sequence = 42
        envelope.session = "s"
        envelope.chordsetRenamed = .with { $0.title = "Night" }
        let record: [UInt8] = try envelope.serializedBytes()
        var buffer = ByteBuffer()
        try ReplyFrame.write(callID: 9, payload: .field(1, record[...]), status: .ok, into: &buffer)
        let frame = try #require(try frames(buffer).first)
        guard case .reply(let reply) = frame.kind else {
            Issue.record("not a reply: \(frame)")
            return
        }
        #expect(reply.callID == 9)
        #expect(try Chordstore_V1_CommandReply(serializedBytes: reply.payload).event == envelope)
        #expect(reply.hasStatus && reply.status == .ok)
    }

    @Test("a field-3 payload is the BackupChunk whose data is the slice, for lengths around each varint size")
    func field3IsBackupChunkData() throws {
        for count in [1, 127, 128, 16_383, 16_384, 1 << 20] {
            let block = (0..<(count + 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let slice = block[5..<(5 + count)]
            var buffer = ByteBuffer()
            try ReplyFrame.write(callID: 7, payload: .field(3, slice), status: nil, into: &buffer)
            let frame = try #require(try frames(buffer).first)
            guard case .reply(let reply) = frame.kind else {
                Issue.record("not a reply: \(frame)")
                return
            }
            let chunk = try Chordstore_V1_BackupChunk(serializedBytes: reply.payload)
            #expect(chunk.data == Data(slice), "\(count) bytes")
            #expect(ReplyPayload.field(3, slice).serialized == (try chunk.serializedBytes() as [UInt8]), "\(count) bytes")
        }
    }

    @Test("frames written one after another into one buffer split back apart")
    func several() throws {
        var buffer = ByteBuffer()
        try ReplyFrame.write(callID: 1, payload: .bytes([1, 2, 3]), status: nil, into: &buffer)
        try ReplyFrame.write(.goAway(WireError(.unavailable, "bye")), into: &buffer)
        try ReplyFrame.write(callID: 1, payload: .none, status: .ok, into: &buffer)
        let decoded = try frames(buffer)
        #expect(decoded.count == 3)
        #expect(decoded[1] == .goAway(WireError(.unavailable, "bye")))
        #expect(decoded[2] == .reply(callID: 1, status: .ok))
    }
}
