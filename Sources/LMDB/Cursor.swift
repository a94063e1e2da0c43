internal import CLMDB

/// A position in a database, valid only inside ``Transaction/withCursor(_:_:)``.
/// Returned buffers point into the map and live as long as the transaction.
public struct Cursor {
    /// One key/value pair.
    public typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

    let handle: OpaquePointer
    let name: String

    /// The first entry.
    public mutating func first() throws(LMDBError) -> Entry? { try move(MDB_FIRST) }
    /// The last entry.
    public mutating func last() throws(LMDBError) -> Entry? { try move(MDB_LAST) }
    /// The entry after the current one.
    public mutating func next() throws(LMDBError) -> Entry? { try move(MDB_NEXT) }
    /// The entry before the current one.
    public mutating func previous() throws(LMDBError) -> Entry? { try move(MDB_PREV) }

    /// The first entry whose key is at least `key`.
    public mutating func seek(atLeast key: UnsafeRawBufferPointer) throws(LMDBError) -> Entry? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, MDB_SET_RANGE)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_cursor_get(\(name), SET_RANGE)")
        return (UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
                UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }

    /// Stores `value` under `key` through the cursor, which is left on the new entry
    /// (write transactions only). With ``PutFlags/append`` in a loop this is the fastest
    /// way to load sorted data: the cursor stays on the last page.
    public mutating func put(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = []) throws(LMDBError) {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        try check(mdb_cursor_put(handle, &k, &v, flags.rawValue), "mdb_cursor_put(\(name))")
    }

    private mutating func move(_ op: MDB_cursor_op) throws(LMDBError) -> Entry? {
        var k = MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_cursor_get(\(name))")
        return (UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size),
                UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
    }
}
