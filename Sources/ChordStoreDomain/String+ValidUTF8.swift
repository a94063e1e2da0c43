extension String {
    /// `bytes` as a string if they are valid UTF-8, else `nil`: what
    /// `String(validating: bytes, as: UTF8.self)` answers. That initializer does its work
    /// in `String._validate<Encoding>`, generic and not inlinable, so every call looked
    /// generic metadata up at run time: 3% of a point read's server CPU (the frame's
    /// strings) and 5% of a rebuild's (the records').
    ///
    /// This one decodes through the standard library's specialized path, which copies
    /// valid input as it is and repairs invalid sequences with U+FFFD, then keeps the
    /// result only if its bytes are the input's: the result is always valid UTF-8, so equal
    /// bytes prove the input valid.
    package init?(validUTF8 bytes: UnsafeRawBufferPointer) {
        var string = bytes.withMemoryRebound(to: UInt8.self) { String(decoding: $0, as: UTF8.self) }
        guard string.withUTF8({ Self.sameBytes(UnsafeRawBufferPointer($0), bytes) }) else { return nil }
        self = string
    }

    /// Whether `a` and `b` hold the same bytes, compared eight at a time (a comparison
    /// through `elementsEqual` went byte by byte through iterators, slower than the decode).
    private static func sameBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        var offset = 0
        while offset + 8 <= a.count {
            guard a.loadUnaligned(fromByteOffset: offset, as: UInt64.self) == b.loadUnaligned(fromByteOffset: offset, as: UInt64.self) else {
                return false
            }
            offset += 8
        }
        while offset < a.count {
            guard a[offset] == b[offset] else { return false }
            offset += 1
        }
        return true
    }
}
