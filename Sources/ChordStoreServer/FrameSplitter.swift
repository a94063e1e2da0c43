import ChordStoreWire
import NIOCore

/// Splits a client's byte stream into frame bodies (a 4-byte big-endian length N, then N
/// bytes), reading each length once. A pure value: fed buffers, it hands out whole
/// frames as slices of what it was fed (no copy when a frame arrives within one read),
/// and tells how long the frame in progress is, so that the limits on incomplete
/// frames can apply (``FrameReader``).
struct FrameSplitter {
    /// What ``next()`` found.
    enum Step: Equatable {
        /// A whole frame's body.
        case frame(ByteBuffer)
        /// A length prefix over the limit: the connection must end before its body is
        /// buffered.
        case tooLarge(length: Int)
        /// The bytes ran out: inside a frame whose length is known, inside a length
        /// prefix (`nil`), or between frames (`nil`, and ``isMidFrame`` false).
        case needMore(length: Int?)
    }

    /// The largest frame body accepted, in bytes.
    let maxFrameSize: Int
    /// Bytes fed and not handed out yet: the start of the next frame.
    private var pending = ByteBuffer()
    /// Frames handed out so far.
    private(set) var completed = 0

    init(maxFrameSize: Int) {
        self.maxFrameSize = maxFrameSize
    }

    /// Whether a frame has begun and not ended.
    var isMidFrame: Bool { pending.readableBytes > 0 }

    /// Takes the bytes of one read.
    mutating func append(_ bytes: ByteBuffer) {
        if pending.readableBytes == 0 {
            pending = bytes  // the usual case: no copy, frames are sliced out of the read
        } else {
            var bytes = bytes
            pending.writeBuffer(&bytes)
        }
    }

    /// The next whole frame, or why there is none yet.
    mutating func next() -> Step {
        guard let length = pending.getInteger(at: pending.readerIndex, endianness: .big, as: UInt32.self) else {
            return .needMore(length: nil)
        }
        guard length <= maxFrameSize else { return .tooLarge(length: Int(length)) }
        guard pending.readableBytes >= 4 + Int(length) else {
            keepOnlyTheFrameInProgress(length: Int(length))
            return .needMore(length: Int(length))
        }
        pending.moveReaderIndex(forwardBy: 4)
        completed += 1
        return .frame(pending.readSlice(length: Int(length))!)
    }

    /// Moves an incomplete frame's bytes out of the read buffer they came in (which may
    /// hold frames already handed out), into one with room for the whole frame, or for
    /// ``WireLimits/budgetedFrameSize`` of it when it is larger (its budget is not
    /// reserved yet: room beyond is made as its bytes arrive), so the rest of it is
    /// appended in place.
    private mutating func keepOnlyTheFrameInProgress(length: Int) {
        let room = 4 + min(length, WireLimits.budgetedFrameSize)
        guard pending.readerIndex > 0 || pending.capacity < room else { return }
        var moved = ByteBuffer()
        moved.reserveCapacity(max(room, pending.readableBytes))
        moved.writeBuffer(&pending)
        pending = moved
    }
}
