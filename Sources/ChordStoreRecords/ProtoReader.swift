package import ChordStoreDomain

/// A minimal protobuf wire-format reader over a borrowed buffer, the counterpart of
/// ``ProtoWriter``. Every malformation (truncation, overlong varint, bad wire type,
/// invalid UTF-8) throws `dataLoss`; unknown fields are skipped, as protobuf requires.
package struct ProtoReader {
    private let buffer: UnsafeRawBufferPointer
    private var offset = 0

    package init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    package var isAtEnd: Bool { offset >= buffer.count }

    /// How many bytes of the buffer were read.
    package var position: Int { offset }

    /// The next field number and wire type, or `nil` at the end.
    package mutating func next() throws(ChordStoreError) -> (field: Int, wireType: UInt8)? {
        guard !isAtEnd else { return nil }
        let key = try varint()
        let field = key >> 3
        guard field > 0, field <= 536_870_911 else { throw malformed("field number \(field)") }
        return (Int(field), UInt8(key & 7))
    }

    package mutating func varint() throws(ChordStoreError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while offset < buffer.count {
            let byte = buffer[offset]
            offset += 1
            if shift == 63 && byte > 1 { throw malformed("varint overflows 64 bits") }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
        throw malformed("truncated varint")
    }

    package mutating func fixed64() throws(ChordStoreError) -> UInt64 {
        guard buffer.count - offset >= 8 else { throw malformed("truncated fixed64") }
        let value = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        offset += 8
        return value
    }

    package mutating func double() throws(ChordStoreError) -> Double { Double(bitPattern: try fixed64()) }

    /// A length-delimited field's contents (valid while the buffer is).
    package mutating func lengthDelimited() throws(ChordStoreError) -> UnsafeRawBufferPointer {
        let length = try varint()
        guard length <= UInt64(buffer.count - offset) else { throw malformed("length \(length) runs past the end") }
        let slice = UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + Int(length))])
        offset += Int(length)
        return slice
    }

    package mutating func string() throws(ChordStoreError) -> String {
        let raw = try lengthDelimited()
        guard let string = String(validUTF8: raw) else { throw malformed("invalid UTF-8 in a string") }
        return string
    }

    /// The next byte.
    package mutating func byte() throws(ChordStoreError) -> UInt8 {
        guard offset < buffer.count else { throw malformed("truncated byte") }
        defer { offset += 1 }
        return buffer[offset]
    }

    /// The next `count` bytes as they are (valid while the buffer is).
    package mutating func bytes(_ count: Int) throws(ChordStoreError) -> UnsafeRawBufferPointer {
        guard count >= 0, count <= buffer.count - offset else { throw malformed("\(count) bytes run past the end") }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + count)])
    }

    /// The bytes left, as they are (valid while the buffer is).
    package mutating func rest() -> UnsafeRawBufferPointer {
        defer { offset = buffer.count }
        return UnsafeRawBufferPointer(rebasing: buffer[min(offset, buffer.count)...])
    }

    package mutating func uint32() throws(ChordStoreError) -> Int { Int(UInt32(truncatingIfNeeded: try varint())) }

    /// Skips a field of `wireType` (for unknown fields).
    package mutating func skip(_ wireType: UInt8) throws(ChordStoreError) {
        switch wireType {
        case 0: _ = try varint()
        case 1: _ = try fixed64()
        case 2: _ = try lengthDelimited()
        case 5:
            guard buffer.count - offset >= 4 else { throw malformed("truncated fixed32") }
            offset += 4
        default: throw malformed("wire type \(wireType)")
        }
    }

    /// Checks that `field` arrived with `expected` wire type.
    package func expect(_ wireType: UInt8, _ expected: UInt8, field: Int) throws(ChordStoreError) {
        guard wireType == expected else { throw malformed("field \(field) has wire type \(wireType), expected \(expected)") }
    }

    private func malformed(_ what: String) -> ChordStoreError {
        ChordStoreError(.dataLoss, "malformed protobuf: \(what) at byte \(offset)")
    }
}
