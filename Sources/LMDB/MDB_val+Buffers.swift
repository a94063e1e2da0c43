internal import CLMDB

/// The bridge between Swift buffers and LMDB's `MDB_val`, in one place for every call
/// that hands LMDB a key or a value or reads one back.
extension MDB_val {
    /// A value that points at `bytes` (LMDB only reads through it, except where a flag
    /// such as `MDB_RESERVE` says otherwise, which no caller here uses).
    init(_ bytes: UnsafeRawBufferPointer) {
        self.init(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
    }

    /// The bytes this value points at (in the map, after a read).
    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: mv_data, count: mv_size)
    }
}
