internal import CLMDB

/// A position in a database, valid only inside ``Transaction/withCursor(_:_:)``.
/// Returned buffers point into the map and live as long as a read transaction; in a write
/// transaction, until the next write to their database.
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
        var k = MDB_val(key)
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, MDB_SET_RANGE)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_cursor_get(\(name), SET_RANGE)")
        return (k.bytes, v.bytes)
    }

    /// The value stored under exactly `key`, the cursor left on it; `nil` (the cursor's
    /// position then undefined) if there is none. In a write transaction the bytes are
    /// valid only until the next write to the database.
    public mutating func find(_ key: UnsafeRawBufferPointer) throws(LMDBError) -> UnsafeRawBufferPointer? {
        var k = MDB_val(key)
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, MDB_SET_KEY)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_cursor_get(\(name), SET_KEY)")
        return v.bytes
    }

    /// Replaces the value of the entry the cursor is on (`key` must be its key) without
    /// searching the tree again (write transactions only); a value of the same size is
    /// written in place.
    public mutating func replaceCurrent(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(LMDBError) {
        var k = MDB_val(key)
        var v = MDB_val(value)
        try check(mdb_cursor_put(handle, &k, &v, UInt32(MDB_CURRENT)), "mdb_cursor_put(\(name), CURRENT)")
    }

    /// Stores `value` under `key` unless the key is present: returns `nil` when stored,
    /// else the present value (valid until the next write to the database), with the
    /// cursor left on its entry (so that ``replaceCurrent(key:value:)`` can change it
    /// without a second search).
    public mutating func putIfAbsent(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws(LMDBError) -> UnsafeRawBufferPointer? {
        var k = MDB_val(key)
        var v = MDB_val(value)
        let rc = mdb_cursor_put(handle, &k, &v, UInt32(MDB_NOOVERWRITE))
        if rc == MDB_KEYEXIST { return v.bytes }
        try check(rc, "mdb_cursor_put(\(name), NOOVERWRITE)")
        return nil
    }

    /// Stores `value` under `key` through the cursor, which is left on the new entry
    /// (write transactions only). With ``PutFlags/append`` in a loop this is the fastest
    /// way to load sorted data: the cursor stays on the last page.
    public mutating func put(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, flags: PutFlags = []) throws(LMDBError) {
        var k = MDB_val(key)
        var v = MDB_val(value)
        try check(mdb_cursor_put(handle, &k, &v, flags.rawValue), "mdb_cursor_put(\(name))")
    }

    private mutating func move(_ op: MDB_cursor_op) throws(LMDBError) -> Entry? {
        var k = MDB_val()
        var v = MDB_val()
        let rc = mdb_cursor_get(handle, &k, &v, op)
        if rc == MDB_NOTFOUND { return nil }
        try check(rc, "mdb_cursor_get(\(name))")
        return (k.bytes, v.bytes)
    }
}
