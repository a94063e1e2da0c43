import Foundation

extension String {
    /// `bytes` as a string if they are valid UTF-8, else `nil`: what
    /// `String(validating: bytes, as: UTF8.self)` answers. That initializer does its work
    /// in `String._validate<Encoding>`, generic and not inlinable, so every call looked
    /// generic metadata up at run time: 3% of a point read's server CPU (the frame's
    /// strings) and 5% of a rebuild's (the records').
    ///
    /// This one decodes through the standard library's specialized path, which copies
    /// valid input as it is and repairs invalid sequences with U+FFFD, then keeps the
    /// result only if its bytes are the input's (`memcmp`; a comparison through
    /// `elementsEqual` went byte by byte through iterators, slower than the decode): the
    /// result is always valid UTF-8, so equal bytes prove the input valid.
    package init?(validUTF8 bytes: UnsafeRawBufferPointer) {
        var string = bytes.withMemoryRebound(to: UInt8.self) { String(decoding: $0, as: UTF8.self) }
        let unchanged = string.withUTF8 { decoded in
            decoded.count == bytes.count && (bytes.isEmpty || memcmp(decoded.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
        guard unchanged else { return nil }
        self = string
    }
}
