import ChordStoreDomain
public import ChordStoreProto
public import NIOCore
import Foundation
import SwiftProtobuf

extension Chordstore_V1_Frame {
    /// A reply carrying `payload` and, when `status` is given, ending the call.
    public static func reply(callID: UInt64, payload: [UInt8]? = nil, status: Chordstore_V1_Status? = nil) -> Chordstore_V1_Frame {
        var reply = Chordstore_V1_Reply()
        reply.callID = callID
        if let payload { reply.payload = Data(payload) }
        if let status { reply.status = status }
        var frame = Chordstore_V1_Frame()
        frame.reply = reply
        return frame
    }

    /// A connection-level error, sent before the server closes the connection; with
    /// `FRAME_TOO_LARGE`, `maxFrameSize` is the limit the frame exceeded.
    public static func goAway(_ error: WireError, maxFrameSize: Int = 0) -> Chordstore_V1_Frame {
        var frame = Chordstore_V1_Frame()
        frame.goAway = .with {
            $0.status = .init(error)
            $0.maxFrameSize = UInt64(max(0, maxFrameSize))
        }
        return frame
    }

    /// The frame's body in a new buffer, ready for ``FrameEncoder``.
    public func body(allocator: ByteBufferAllocator) throws -> ByteBuffer {
        let bytes: [UInt8] = try serializedBytes()
        var buffer = allocator.buffer(capacity: bytes.count)
        buffer.writeBytes(bytes)
        return buffer
    }
}

extension Chordstore_V1_Status {
    /// The status of `error`.
    public init(_ error: WireError) {
        self.init()
        code = error.code.rawValue
        reason = error.reason.rawValue
        message = error.message
        currentRevision = error.currentRevision ?? 0
        leader = error.leader ?? ""
    }

    /// OK.
    public static let ok = Chordstore_V1_Status()
}
