/// A minimal protobuf wire-format writer for the store's hot path (log records and view
/// records). The messages it writes are those of `proto/`, field for field; the tests
/// check that SwiftProtobuf reads them back identically. Writing by hand avoids
/// SwiftProtobuf's size pass and its allocations: encoding is most of a commit's CPU.
package struct ProtoWriter {
    package private(set) var bytes: [UInt8] = []

    package init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    /// Empties the buffer, keeping its storage for the next message.
    package mutating func removeAll() { bytes.removeAll(keepingCapacity: true) }

    package mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// Bytes already in the wire format (a whole encoded field or message body).
    package mutating func raw(_ encoded: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: encoded)
    }

    package mutating func tag(_ field: Int, _ wireType: UInt8) {
        varint(UInt64(field) << 3 | UInt64(wireType))
    }

    /// A varint field, omitted when zero (proto3).
    package mutating func uint(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, 0)
        varint(value)
    }

    /// An `int64`/`int32` field (two's complement varint), omitted when zero.
    package mutating func int(_ field: Int, _ value: Int64) {
        uint(field, UInt64(bitPattern: value))
    }

    /// A `double` field, omitted when +0.0 (so -0.0 keeps its sign).
    package mutating func double(_ field: Int, _ value: Double) {
        guard value.bitPattern != 0 else { return }
        tag(field, 1)
        fixed64(value.bitPattern)
    }

    package mutating func fixed64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A `bytes` field, omitted when empty.
    package mutating func bytes(_ field: Int, _ value: UnsafeRawBufferPointer) {
        guard !value.isEmpty else { return }
        tag(field, 2)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A `string` field, omitted when empty.
    package mutating func string(_ field: Int, _ value: String) {
        guard !value.isEmpty else { return }
        tag(field, 2)
        varint(UInt64(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    /// At most `maxBytes` written by `body` into scratch memory on the stack, appended in
    /// one go: a small message of bounded size (a chord's) costs one capacity check and
    /// one copy instead of one per byte.
    mutating func appendInline(maxBytes: Int, _ body: (inout InlineProtoWriter) -> Void) {
        withUnsafeTemporaryAllocation(byteCount: maxBytes, alignment: 8) { buffer in
            var inline = InlineProtoWriter(buffer)
            body(&inline)
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<inline.count]))
        }
    }

    /// A nested message field, always written (an empty message has length 0).
    package mutating func message(_ field: Int, _ body: (inout ProtoWriter) -> Void) {
        tag(field, 2)
        let lengthAt = bytes.count
        bytes.append(0)
        body(&self)
        let length = bytes.count - lengthAt - 1
        if length < 0x80 {
            bytes[lengthAt] = UInt8(length)
        } else {
            var prefix = ProtoWriter(capacity: 4)
            prefix.varint(UInt64(length))
            bytes.replaceSubrange(lengthAt...lengthAt, with: prefix.bytes)
        }
    }
}
