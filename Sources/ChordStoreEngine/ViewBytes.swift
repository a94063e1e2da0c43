import ChordStoreRecords

/// Bytes a views transaction (``ScopedTransaction``) takes as a key or a value: arrays,
/// the inline keys of the hot paths (``KeyBytes``), and bytes built on the stack.
/// Declared here rather than Foundation's `ContiguousBytes` so that the conformances are
/// this module's and a call is specialized and inlined: through the witness of a protocol
/// and a type of other modules, each key cost an unspecialized generic call, more than
/// the allocation the inline key saves.
protocol ViewBytes {
    /// Calls `body` with the bytes.
    func withViewBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: ViewBytes where Element == UInt8 {
    @inline(__always)
    func withViewBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try withUnsafeBytes(body) }
}

extension KeyBytes: ViewBytes {
    /// The bytes read here rather than through ``KeyBytes/withUnsafeBytes(_:)``, which the
    /// optimizer left an unspecialized call of the other module.
    @inline(__always)
    func withViewBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let count = count
        return try Swift.withUnsafeBytes(of: storage) { try body(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
    }
}

extension UnsafeRawBufferPointer: ViewBytes {
    @inline(__always)
    func withViewBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try body(self) }
}
