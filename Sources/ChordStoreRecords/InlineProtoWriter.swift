import Foundation

/// ``ProtoWriter``'s field writers over a fixed buffer (``ProtoWriter/appendInline(maxBytes:_:)``):
/// the same bytes, the same proto3 omissions (a change to one is a change to both; the
/// codec's tests compare what they write with SwiftProtobuf's bytes). Writing past the
/// buffer traps. It lives inside `appendInline`'s closure, whose buffer it points into:
/// it is not kept.
struct InlineProtoWriter {
    private let buffer: UnsafeMutableRawBufferPointer
    /// How many bytes are written.
    private(set) var count = 0

    init(_ buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    @inline(__always)
    private mutating func byte(_ value: UInt8) {
        precondition(count < buffer.count, "an inline message overran its \(buffer.count) bytes")
        buffer[count] = value
        count += 1
    }

    /// A varint.
    @inline(__always)
    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            byte(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        byte(UInt8(v))
    }

    /// A field's tag.
    @inline(__always)
    mutating func tag(_ field: Int, _ wireType: UInt8) {
        varint(UInt64(field) << 3 | UInt64(wireType))
    }

    /// A varint field, omitted when zero (proto3).
    @inline(__always)
    mutating func uint(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, 0)
        varint(value)
    }

    /// A `double` field, omitted when +0.0 (so -0.0 keeps its sign).
    @inline(__always)
    mutating func double(_ field: Int, _ value: Double) {
        guard value.bitPattern != 0 else { return }
        tag(field, 1)
        precondition(count + 8 <= buffer.count, "an inline message overran its \(buffer.count) bytes")
        buffer.storeBytes(of: value.bitPattern.littleEndian, toByteOffset: count, as: UInt64.self)
        count += 8
    }

    /// A `bytes` field holding a 16-byte id.
    @inline(__always)
    mutating func id(_ field: Int, _ id: UUID) {
        tag(field, 2)
        byte(16)
        precondition(count + 16 <= buffer.count, "an inline message overran its \(buffer.count) bytes")
        withUnsafeBytes(of: id.uuid) { buffer.baseAddress!.advanced(by: count).copyMemory(from: $0.baseAddress!, byteCount: 16) }
        count += 16
    }

    /// A nested message field whose body is shorter than 128 bytes (a one-byte length).
    mutating func shortMessage(_ field: Int, _ body: (inout InlineProtoWriter) -> Void) {
        tag(field, 2)
        let lengthAt = count
        byte(0)
        body(&self)
        let length = count - lengthAt - 1
        precondition(length < 0x80, "a short message of \(length) bytes")
        buffer[lengthAt] = UInt8(length)
    }
}
