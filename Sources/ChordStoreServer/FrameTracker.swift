import NIOCore

/// Follows the frame boundaries of a byte stream by their 4-byte big-endian length
/// prefixes alone, for the limits that apply while a frame is incomplete (its timeout,
/// the buffered-bytes budget). A pure value: fed bytes, it reports where frames start
/// and end.
struct FrameTracker {
    /// What the bytes consumed by ``next(_:)`` reached.
    enum Step: Equatable {
        /// A frame's length prefix completed; `length` body bytes follow (never 0).
        case started(length: Int)
        /// A frame completed (its body, or an empty frame's prefix).
        case completed
        /// The bytes ran out inside a frame or between frames.
        case exhausted
    }

    /// Frames completed so far.
    private(set) var completed = 0
    /// Length-prefix bytes seen of the current frame (0...3), and their value so far.
    private var headerBytes = 0
    private var header: UInt32 = 0
    /// Body bytes still to come of the current frame.
    private var remaining = 0

    /// Whether a frame has begun and not ended.
    var isMidFrame: Bool { remaining > 0 || headerBytes > 0 }

    /// Consumes bytes from the front of `bytes` up to the next boundary.
    mutating func next(_ bytes: inout ByteBufferView) -> Step {
        while let first = bytes.first {
            if remaining > 0 {
                let take = min(remaining, bytes.count)
                remaining -= take
                bytes = bytes.dropFirst(take)
                if remaining == 0 {
                    completed += 1
                    return .completed
                }
            } else {
                header = header << 8 | UInt32(first)
                bytes = bytes.dropFirst()
                headerBytes += 1
                if headerBytes == 4 {
                    remaining = Int(header)
                    headerBytes = 0
                    header = 0
                    if remaining == 0 {
                        completed += 1
                        return .completed
                    }
                    return .started(length: remaining)
                }
            }
        }
        return .exhausted
    }
}
